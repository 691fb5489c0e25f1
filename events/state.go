package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/invoicing-ao/gateway/invoicing"
)

// Export and import of the webhook endpoints (state, `gateway state
// export|import`). What is exported is each endpoint's record as Redis
// keeps it, its signing secrets opened (the export file seals them again,
// with its own passphrase or recipients): id, creation time, state and
// health kept. The queue, the deliveries and the events are not: they come
// from the platform's database, which detection reads again. An import
// that restores an endpoint moves detection back to the export's resume
// point (resume.go), or rewinds it (markRewind) over Config.Recovery for an
// export without one: every change since reaches the restored endpoints,
// under the ids it had (receivers drop what they had by webhook-id); events
// older than Config.Recovery which had not been delivered are lost with the
// Redis that held them.

// StateVersion is the version of the endpoints' part of an export: 2 adds
// ResumeFrom, 3 OverdueFrom and TakenAt; versions 1 and 2 are read too.
const StateVersion = 3

// deletedKept is how long a deleted endpoint's mark is kept: as long as an
// export is worth importing.
const deletedKept = 400 * 24 * time.Hour

// State is the endpoints' part of an export.
type State struct {
	Version int `json:"version"`
	// "endpoints" in the file: exports already written keep importing.
	Webhooks []WebhookRecord `json:"endpoints"`
	// ResumeFrom is where detection resumes, by mode, when an import
	// restores endpoints (resume.go); a mode without one (version 1, or
	// detection not started) is read back over the recovery window.
	ResumeFrom map[invoicing.Mode]time.Time `json:"resumeFrom,omitempty"`
	// OverdueFrom is where the overdue invoices resume, by mode: the first
	// due date (YYYY-MM-DD) whose invoice.overdue may not have been
	// delivered; a mode without one rewinds them over the recovery window.
	OverdueFrom map[invoicing.Mode]string `json:"overdueFrom,omitempty"`
	// TakenAt is when the resume points were read (zero before version 3):
	// a row changed since had been passed by detection unchanged (recency).
	TakenAt time.Time `json:"takenAt,omitzero"`
}

// WebhookRecord is one webhook endpoint: its id and its hash's fields (layout.go:
// cfg, the JSON of its configuration with its secrets in plain text,
// enabled, and the health fields when set).
type WebhookRecord struct {
	ID     string            `json:"id"`
	Fields map[string]string `json:"fields"`
}

// maxHealthText bounds an endpoint's last error and reason for being
// disabled: the gateway's own words, a few lines at most.
const maxHealthText = 2048

var endpointFields = []string{"cfg", "enabled", "failing", "ok", "err", "disabled", "why"}

// ErrInvalidState: the endpoints of an export cannot be imported.
var ErrInvalidState = errors.New("invalid record")

// ExportState reads every endpoint, its secrets opened.
func (es *Webhooks) ExportState(ctx context.Context) (State, error) {
	st := State{Version: StateVersion, Webhooks: []WebhookRecord{}}
	byMode := map[invoicing.Mode][]string{}
	for _, m := range invoicing.Modes {
		companies, err := es.rdb.SMembers(ctx, es.l.companies(m)).Result()
		if err != nil {
			return State{}, unavailable(err)
		}
		for _, c := range companies {
			ids, err := es.rdb.SMembers(ctx, es.l.endpoints(m, c)).Result()
			if err != nil {
				return State{}, unavailable(err)
			}
			for _, id := range ids {
				h, err := es.rdb.HGetAll(ctx, es.l.endpoint(id)).Result()
				if err != nil {
					return State{}, unavailable(err)
				}
				if len(h) == 0 {
					continue // deleted meanwhile
				}
				if h["cfg"], err = es.openConfig(id, h["cfg"]); err != nil {
					return State{}, err
				}
				st.Webhooks = append(st.Webhooks, WebhookRecord{ID: id, Fields: h})
				byMode[m] = append(byMode[m], id)
			}
		}
	}
	slices.SortFunc(st.Webhooks, func(a, b WebhookRecord) int { return cmpString(a.ID, b.ID) })
	resume, err := es.resumePoints(ctx, byMode)
	if err != nil {
		return State{}, err
	}
	if len(resume) > 0 {
		st.TakenAt = es.now().UTC()
	}
	for m, r := range resume {
		if !r.at.IsZero() {
			if st.ResumeFrom == nil {
				st.ResumeFrom = map[invoicing.Mode]time.Time{}
			}
			st.ResumeFrom[m] = r.at
		}
		if r.overdue != "" {
			if st.OverdueFrom == nil {
				st.OverdueFrom = map[invoicing.Mode]string{}
			}
			st.OverdueFrom[m] = r.overdue
		}
	}
	return st, nil
}

// openConfig is a cfg with its secrets opened.
func (es *Webhooks) openConfig(id, raw string) (string, error) {
	var c config
	if err := json.Unmarshal([]byte(raw), &c); err != nil {
		return "", fmt.Errorf("events: endpoint %s: corrupt record: %w", id, err)
	}
	for i, sec := range c.Secrets {
		plain, err := es.sealer.Open(sec.Secret)
		if err != nil {
			return "", fmt.Errorf("events: endpoint %s: %w: %w", id, errUnsealable, err)
		}
		c.Secrets[i].Secret = plain
	}
	b, _ := json.Marshal(c)
	return string(b), nil
}

// check refuses a record the service could not have written, or that the
// admin API would refuse (PlanImport checks the URL too), and returns its
// configuration.
func (r WebhookRecord) check() (config, error) {
	bad := func(f string, a ...any) (config, error) {
		return config{}, fmt.Errorf("%w: endpoint %s: %s", ErrInvalidState, invoicing.Clip(r.ID), fmt.Sprintf(f, a...))
	}
	if !validEndpointID(r.ID) {
		return bad("not an endpoint id")
	}
	for f := range r.Fields {
		if !slices.Contains(endpointFields, f) {
			return bad("unknown field %q", invoicing.Clip(f))
		}
	}
	var c config
	if err := json.Unmarshal([]byte(r.Fields["cfg"]), &c); err != nil {
		return bad("cfg: %v", err)
	}
	if id, ok := invoicing.CanonicalUUID(c.CompanyID); !ok || id != c.CompanyID || !c.Mode.Valid() || c.CreatedAt.IsZero() {
		return bad("company, mode or creation time missing")
	}
	if _, err := ParseTypes(typeNames(c.Types)); err != nil {
		return bad("types: %v", err)
	}
	if err := checkDescription(c.Description); err != nil {
		return bad("%v", fieldMessage(err))
	}
	for _, f := range []struct{ name, v string }{{"url", c.URL}, {"description", c.Description}} {
		if invoicing.HoldsSecret(f.v) {
			return bad("%s: must not hold what looks like an API key or a webhook signing secret", f.name)
		}
		if r, ok := invoicing.HiddenRune(f.v); ok {
			return bad("%s: %s", f.name, invoicing.HiddenMessage(r))
		}
	}
	if len(c.Secrets) == 0 {
		return bad("no signing secret")
	}
	for _, sec := range c.Secrets {
		if _, err := secretKey(sec.Secret); err != nil {
			return bad("a signing secret that is not one (a file made without its secrets?)")
		}
	}
	for _, f := range []string{"err", "why"} {
		if len(r.Fields[f]) > maxHealthText {
			return bad("%s: longer than %d bytes", f, maxHealthText)
		}
	}
	if e := r.Fields["enabled"]; e != "1" && e != "0" {
		return bad("enabled %q", invoicing.Clip(e))
	}
	return c, nil
}

// fieldMessage is what a check's error says of its field ("url must use
// https, not \"http\""), without the API's error around it.
func fieldMessage(err error) string {
	var fe *invoicing.FieldError
	if errors.As(err, &fe) {
		return fe.Field + " " + fe.Message
	}
	return err.Error()
}

func typeNames(ts []Type) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = string(t)
	}
	return out
}

// importScript writes an endpoint (KEYS[1]) if Redis still has it as the
// plan read it (its cfg ARGV[1], "" for none; its deletion mark KEYS[5]
// ARGV[2], "" for none): the plan chose by their times, and this write
// must not undo a change made since. It files the endpoint in its
// company's set (KEYS[2]) and the companies of its mode (KEYS[3]), and
// moves the endpoints' version (KEYS[4]). ARGV[3] its id, ARGV[4] its
// company, ARGV[5...] its fields. It returns 1 when it wrote, 0 when Redis
// changed since the plan.
var importScript = redis.NewScript(`
if (redis.call('GET', KEYS[5]) or '') ~= ARGV[2] then return 0 end
if (redis.call('HGET', KEYS[1], 'cfg') or '') ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], unpack(ARGV, 5))
redis.call('SADD', KEYS[2], ARGV[3])
redis.call('SADD', KEYS[3], ARGV[4])
redis.call('INCR', KEYS[4])
return 1`)

// Records is how many endpoints s holds.
func (s State) Records() int { return len(s.Webhooks) }
