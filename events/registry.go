package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/invoicing-ao/gateway/internal/durable"

	"github.com/invoicing-ao/gateway/invoicing"
)

// Webhooks manages the webhook endpoints: their creation, changes, secrets
// and deletion (deletion.go, secrets.go), their export and import
// (state.go), each change confirmed by Redis's replicas (replicas.go); and
// it reads them for detection (targets.go) and delivery. A Service embeds
// it: its methods are the Service's.
type Webhooks struct {
	*base
	repl   durable.Policy // the endpoint changes' acknowledgements (replicas.go)
	dest   destinations
	sealer Sealer
	// recovery is detection's Config.Recovery, which bounds how far back
	// an export's resume point reaches (resume.go); sweep is its
	// Config.Sweep, how long after the resume point the sweep's floor
	// matters.
	recovery, sweep time.Duration
}

// createScript adds an endpoint when its company has fewer than ARGV[1] in
// the mode: check and add in one script, so that concurrent creations cannot
// overshoot. KEYS[1] the company's set; ARGV: max, id, endpoint key, cfg,
// enabled (1/0), companies key, company, now (ms), reason when disabled,
// the version key.
var createScript = redis.NewScript(`
if redis.call('SCARD', KEYS[1]) >= tonumber(ARGV[1]) then return 0 end
redis.call('SADD', KEYS[1], ARGV[2])
redis.call('HSET', ARGV[3], 'cfg', ARGV[4], 'enabled', ARGV[5])
if ARGV[5] == '0' then redis.call('HSET', ARGV[3], 'disabled', ARGV[8], 'why', ARGV[9]) end
redis.call('SADD', ARGV[6], ARGV[7])
redis.call('INCR', ARGV[10])
return 1`)

// CreateWebhook checks ne and adds the endpoint; it returns the endpoint
// and its signing secret, which is shown this once.
func (es *Webhooks) CreateWebhook(ctx context.Context, ne NewWebhook) (Webhook, string, error) {
	company, err := invoicing.ParseCompanyID(ne.CompanyID)
	if err != nil {
		return Webhook{}, "", &invoicing.FieldError{Err: fmt.Errorf("%w: %w", ErrInvalidWebhook, err), Field: "companyId", Message: "must be a company's id (a UUID)"}
	}
	if !ne.Mode.Valid() {
		return Webhook{}, "", invoicing.InvalidField(ErrInvalidWebhook, "mode", "must be LIVE or TEST")
	}
	types, err := ParseTypes(ne.Types)
	if err != nil {
		return Webhook{}, "", err
	}
	if err := checkDescription(ne.Description); err != nil {
		return Webhook{}, "", err
	}
	now := es.now().UTC().Truncate(time.Millisecond)
	if ne.ExpiresAt != nil && !ne.ExpiresAt.After(now) {
		return Webhook{}, "", invoicing.InvalidField(ErrInvalidWebhook, "expiresAt", "must be in the future")
	}
	u, err := es.dest.checkURL(ctx, ne.URL)
	if err != nil {
		return Webhook{}, "", err
	}
	if err := es.dropExpired(ctx, ne.Mode, company); err != nil {
		return Webhook{}, "", err
	}
	sec, stored, err := es.sealNew()
	if err != nil {
		return Webhook{}, "", err
	}
	e := Webhook{ID: newEndpointID(), CompanyID: company, Mode: ne.Mode, URL: u, Types: types, Description: ne.Description,
		Enabled: !ne.Disabled, CreatedAt: now, UpdatedAt: now, ExpiresAt: ne.ExpiresAt, SecretRotatedAt: now,
		secrets: []secret{{Secret: stored}}}
	cfg, _ := json.Marshal(e.config())
	enabled, why := "1", ""
	if ne.Disabled {
		enabled, why = "0", disabledByRequest
		e.Health.DisabledAt, e.Health.DisabledReason = &now, why
	}
	var ok int
	unconfirmed, err := es.confirm(ctx, es.l.endpoint(e.ID), func(c redis.Cmdable) (err error) {
		ok, err = createScript.Run(ctx, c, []string{es.l.endpoints(ne.Mode, company)}, MaxEndpoints, e.ID, es.l.endpoint(e.ID),
			cfg, enabled, es.l.companies(ne.Mode), company, now.UnixMilli(), why, es.l.version()).Int()
		return err
	})
	switch {
	case err != nil:
		return Webhook{}, "", unavailable(err)
	case ok == 0:
		return Webhook{}, "", ErrWebhookLimit
	case unconfirmed: // taken back: its secret is never shown (replicas.go)
		_, _ = es.remove(ctx, e, false)
		return Webhook{}, "", ErrNotReplicatedTakenBack
	}
	return e, sec, nil
}

// disabledByRequest is the reason of an endpoint disabled by its owner.
const disabledByRequest = "disabled on request"

// dropExpired deletes the company's temporary endpoints whose time is over,
// so that they stop counting toward MaxEndpoints.
func (es *Webhooks) dropExpired(ctx context.Context, m invoicing.Mode, company string) error {
	eps, err := es.companyEndpoints(ctx, m, company)
	if err != nil {
		return err
	}
	now := es.now()
	for _, e := range eps {
		if e.ExpiresAt != nil && !e.ExpiresAt.After(now) {
			if _, err := es.remove(ctx, e, false); err != nil && !errors.Is(err, ErrNotFound) {
				return err
			}
		}
	}
	return nil
}

// ListWebhooks lists a company's endpoints of both modes, LIVE first, then
// by creation.
func (es *Webhooks) ListWebhooks(ctx context.Context, companyID string) ([]Webhook, error) {
	company, err := invoicing.ParseCompanyID(companyID)
	if err != nil {
		return nil, fmt.Errorf("%w: companyId: %w", ErrInvalidWebhook, err)
	}
	var out []Webhook
	for _, m := range invoicing.Modes {
		eps, err := es.companyEndpoints(ctx, m, company)
		if err != nil {
			return nil, err
		}
		out = append(out, eps...)
	}
	if out == nil {
		out = []Webhook{}
	}
	return out, nil
}

// companyEndpoints reads the endpoints of a company in a mode, by creation.
func (es *Webhooks) companyEndpoints(ctx context.Context, m invoicing.Mode, company string) ([]Webhook, error) {
	ids, err := es.rdb.SMembers(ctx, es.l.endpoints(m, company)).Result()
	if err != nil {
		return nil, unavailable(err)
	}
	eps, err := es.endpointsByID(ctx, ids)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(eps, func(a, b Webhook) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return cmpString(a.ID, b.ID)
	})
	return eps, nil
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// endpointsByID reads endpoints in one round trip; ids without a record
// (deleted meanwhile) are left out.
func (es *Webhooks) endpointsByID(ctx context.Context, ids []string) ([]Webhook, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	pipe := es.rdb.Pipeline()
	cmds := make([]*redis.MapStringStringCmd, len(ids))
	for i, id := range ids {
		cmds[i] = pipe.HGetAll(ctx, es.l.endpoint(id))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, unavailable(err)
	}
	out := make([]Webhook, 0, len(ids))
	for i, c := range cmds {
		e, ok, err := decodeEndpoint(ids[i], c.Val())
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, e)
		}
	}
	return out, nil
}

// Webhook reads one endpoint.
func (es *Webhooks) Webhook(ctx context.Context, id string) (Webhook, error) {
	if !validEndpointID(id) {
		return Webhook{}, ErrNotFound
	}
	h, err := es.rdb.HGetAll(ctx, es.l.endpoint(id)).Result()
	if err != nil {
		return Webhook{}, unavailable(err)
	}
	e, ok, err := decodeEndpoint(id, h)
	if err != nil {
		return Webhook{}, err
	}
	if !ok {
		return Webhook{}, ErrNotFound
	}
	return e, nil
}

// validEndpointID tells an id of ours from anything else (which is then not
// found, without a Redis key built from it).
func validEndpointID(id string) bool {
	if len(id) != 29 || id[:3] != "ep_" {
		return false
	}
	_, err := idEncoding.DecodeString(id[3:])
	return err == nil
}

// updateScript writes a new cfg if the old one is still there (KEYS[1] the
// endpoint; ARGV old cfg, new cfg, then enable (1), disable (0) or keep (-),
// now (ms), the reason of a disabling, the queue and the ready set keys, the
// endpoint's id and the version key).
var updateScript = redis.NewScript(`
if redis.call('HGET', KEYS[1], 'cfg') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'cfg', ARGV[2])
redis.call('INCR', ARGV[9])
if ARGV[3] == '1' and redis.call('HGET', KEYS[1], 'enabled') ~= '1' then
  redis.call('HSET', KEYS[1], 'enabled', '1')
  redis.call('HDEL', KEYS[1], 'disabled', 'why', 'failing')
  if redis.call('ZCARD', ARGV[6]) > 0 then redis.call('ZADD', ARGV[7], ARGV[4], ARGV[8]) end
elseif ARGV[3] == '0' and redis.call('HGET', KEYS[1], 'enabled') == '1' then
  redis.call('HSET', KEYS[1], 'enabled', '0', 'disabled', ARGV[4], 'why', ARGV[5])
  redis.call('ZREM', ARGV[7], ARGV[8])
end
return 1`)

// UpdateWebhook applies p. Enabling a disabled endpoint resumes its
// deliveries where they stopped (events younger than the retention);
// disabling one holds them.
func (es *Webhooks) UpdateWebhook(ctx context.Context, id string, p Patch) (Webhook, error) {
	return es.change(ctx, id, false, func(e *Webhook) (string, error) {
		if p.URL != nil {
			u, err := es.dest.checkURL(ctx, *p.URL)
			if err != nil {
				return "", err
			}
			e.URL = u
		}
		if p.Types != nil {
			types, err := ParseTypes(*p.Types)
			if err != nil {
				return "", err
			}
			e.Types = types
		}
		if p.Description != nil {
			if err := checkDescription(*p.Description); err != nil {
				return "", err
			}
			e.Description = *p.Description
		}
		if p.ExpiresAt != nil {
			if !p.ExpiresAt.After(e.UpdatedAt) {
				return "", invoicing.InvalidField(ErrInvalidWebhook, "expiresAt", "must be in the future")
			}
			t := p.ExpiresAt.UTC().Truncate(time.Millisecond)
			e.ExpiresAt = &t
		}
		switch {
		case p.Enabled == nil:
			return "-", nil
		case *p.Enabled:
			return "1", nil
		}
		return "0", nil
	})
}

// RotateSecret gives an endpoint a new signing secret, shown this once; the
// old one keeps signing beside it (two signatures per delivery) for overlap
// (0 to MaxOverlap), so that the receiver can switch without losing a
// delivery. A secret still in an earlier rotation's overlap is dropped.
func (es *Webhooks) RotateSecret(ctx context.Context, id string, overlap time.Duration) (Webhook, string, error) {
	if overlap < 0 || overlap > MaxOverlap {
		return Webhook{}, "", invoicing.InvalidField(ErrInvalidWebhook, "overlapSeconds", "must be 0 to %d", int64(MaxOverlap/time.Second))
	}
	sec, stored, err := es.sealNew()
	if err != nil {
		return Webhook{}, "", err
	}
	e, err := es.change(ctx, id, true, func(e *Webhook) (string, error) {
		now := e.UpdatedAt
		old := e.current() // as stored: sealed or not, Reseal makes it current
		e.SecretRotatedAt = now
		e.secrets = []secret{{Secret: stored}}
		e.PreviousSecretUntil = nil
		if old != "" && overlap > 0 {
			until := now.Add(overlap)
			e.secrets = append(e.secrets, secret{Secret: old, Until: until})
			e.PreviousSecretUntil = &until
		}
		return "-", nil
	})
	if err != nil {
		return Webhook{}, "", err
	}
	return e, sec, nil
}

// current is the current secret ("" if the record has none).
func (e *Webhook) current() string {
	for _, s := range e.secrets {
		if s.Until.IsZero() {
			return s.Secret
		}
	}
	return ""
}

// change reads an endpoint, lets edit change it, and writes it back if
// nobody wrote it meanwhile (else reads again, a few times). A change the
// replicas do not confirm is taken back when undo is set (ErrNotReplicatedTakenBack),
// else left in effect and answered with ErrNotReplicated (replicas.go).
func (es *Webhooks) change(ctx context.Context, id string, undo bool, edit func(*Webhook) (enable string, err error)) (Webhook, error) {
	if !validEndpointID(id) {
		return Webhook{}, ErrNotFound
	}
	for range 5 {
		h, err := es.rdb.HGetAll(ctx, es.l.endpoint(id)).Result()
		if err != nil {
			return Webhook{}, unavailable(err)
		}
		e, ok, err := decodeEndpoint(id, h)
		if err != nil {
			return Webhook{}, err
		}
		if !ok {
			return Webhook{}, ErrNotFound
		}
		e.UpdatedAt = es.now().UTC().Truncate(time.Millisecond)
		enable, err := edit(&e)
		if err != nil {
			return Webhook{}, err
		}
		cfg, _ := json.Marshal(e.config())
		now := strconv.FormatInt(e.UpdatedAt.UnixMilli(), 10)
		var done int
		unconfirmed, err := es.confirm(ctx, es.l.endpoint(id), func(c redis.Cmdable) (err error) {
			done, err = updateScript.Run(ctx, c, []string{es.l.endpoint(id)}, h["cfg"], cfg, enable, now, disabledByRequest,
				es.l.queue(id), es.l.ready(), id, es.l.version()).Int()
			return err
		})
		switch {
		case err != nil:
			return Webhook{}, unavailable(err)
		case done == 1 && unconfirmed && undo:
			// The old record back, if it is still the one written.
			_ = updateScript.Run(ctx, es.rdb, []string{es.l.endpoint(id)}, cfg, h["cfg"], "-", now, disabledByRequest,
				es.l.queue(id), es.l.ready(), id, es.l.version()).Err()
			return Webhook{}, ErrNotReplicatedTakenBack
		case done == 1 && unconfirmed:
			e, err := es.Webhook(ctx, id)
			return e, errors.Join(ErrNotReplicated, err)
		case done == 1:
			return es.Webhook(ctx, id)
		}
	}
	return Webhook{}, fmt.Errorf("%w: the endpoint changed too often meanwhile", ErrUnavailable)
}
