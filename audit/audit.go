// Package audit keeps the record of who changed what in a company's keys and
// limits: one Redis stream per company, kept 400 days and bounded in length.
// It stores what it is given (an actor, an action, the state before and
// after, as JSON) and reads it back in order; it knows nothing of keys,
// limits or HTTP, and refuses anything that looks like a key's secret.
package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/invoicing-ao/gateway/internal/durable"
	"github.com/invoicing-ao/gateway/invoicing"
	"github.com/redis/go-redis/v9"
)

// Actions: what happened. People (actors) create, roll and revoke keys and
// set and reset limits; a key's expiry passes by itself, is never recorded,
// and is shown to readers by the gateway as ActionKeyExpired by SystemActor.
const (
	ActionKeyCreated  = "key.created"
	ActionKeyRolled   = "key.rolled"
	ActionKeyRevoked  = "key.revoked"
	ActionKeyExpired  = "key.expired"
	ActionLimitsSet   = "limits.set"
	ActionLimitsReset = "limits.reset"
	// Webhook endpoints: created, changed (URL, types, description,
	// enabled), deleted, and their signing secret rotated.
	ActionWebhookCreated       = "webhook.created"
	ActionWebhookUpdated       = "webhook.updated"
	ActionWebhookDeleted       = "webhook.deleted"
	ActionWebhookSecretRotated = "webhook.secret_rotated"
	// Deliveries sent again on request: one event (replayed), the failed
	// ones since a time (recovered), a test delivery (tested).
	ActionWebhookReplayed  = "webhook.replayed"
	ActionWebhookRecovered = "webhook.recovered"
	ActionWebhookTested    = "webhook.tested"
	// ActionStateImported: an export imported (gateway state import),
	// with what it added and updated in the company, part by part.
	ActionStateImported = "state.imported"
	SystemActor         = "system"
)

// Bounds and defaults.
const (
	MaxActorLen          = 200 // bytes
	DefaultRetention     = 400 * 24 * time.Hour
	DefaultMaxPerCompany = 10_000
	MaxRead              = 1000 // events per Read
)

// Errors of the log.
var (
	// ErrUnavailable wraps the error of a Redis that cannot answer.
	ErrUnavailable = invoicing.Define(invoicing.Error{Kind: invoicing.Unavailable, Code: "audit_unavailable", Title: "Audit log unavailable", Detail: "The audit log cannot be read right now; retry later.", Message: "audit: Redis unavailable"})
	// ErrInvalid: an entry or a read the log refuses (bad actor, action,
	// company, JSON, or what looks like a secret).
	ErrInvalid = errors.New("audit: invalid entry")
	// ErrNotReplicated: the event is recorded on the Redis master but fewer
	// than Config.MinReplicas replicas confirmed it in time, so a Redis
	// failover could lose it. Recording it again would record it twice:
	// the recorder keeps the event elsewhere instead (the gateway logs it).
	ErrNotReplicated = invoicing.Define(invoicing.Error{Kind: invoicing.Unavailable, Code: durable.ProblemCode, Title: durable.ProblemTitle,
		Detail:  "The audit event is recorded, but Redis's replicas did not confirm it in time: if Redis fails over now, it could be lost.",
		Message: "audit: the event is recorded but Redis's replicas did not confirm it, so a Redis failover could lose it"})
)

// Config configures a Log. Every zero value has a working default.
type Config struct {
	// Redis keeps the streams; required.
	Redis redis.UniversalClient
	// Prefix starts every key; zero means "audit:". No braces: the company
	// id is each stream's hash tag.
	Prefix string
	// Retention is how long an event is kept; zero means 400 days.
	Retention time.Duration
	// MaxPerCompany bounds each company's stream; zero means 10,000 events
	// (the oldest go first).
	MaxPerCompany int
	// Now is the clock of event times and of retention; nil means time.Now.
	Now func() time.Time
	// MinReplicas is how many Redis replicas must acknowledge an event
	// before Record reports it recorded (see ErrNotReplicated); zero means
	// none: a Redis failover may lose the last events.
	MinReplicas int
	// ReplicaTarget, when not nil, is read at each change instead of
	// MinReplicas: the binary's, which follows Redis's topology
	// (redisMinReplicas auto) and may rise while it runs.
	ReplicaTarget *durable.Target
	// ReplicaTimeout bounds each wait for those acknowledgements; zero
	// means 1s.
	ReplicaTimeout time.Duration
}

// Entry is what happened, as the recorder tells it.
type Entry struct {
	// Time is when it happened, as the changed thing records it (a key's
	// creation or revocation time); zero means now.
	Time      time.Time
	Actor     string // who: a dashboard user, "user@host" for the command line
	CompanyID string // canonical (invoicing.ParseCompanyID)
	Action    string // one of the Action constants
	KeyID     string // the key concerned; "" for limits
	// WebhookID is the webhook endpoint concerned; "" for keys and limits.
	WebhookID string
	// Before and After are the changed thing's state as JSON objects; nil
	// for none (before a creation).
	Before, After json.RawMessage
}

// Event is a recorded Entry with its id (the stream entry's, which orders
// events) and time.
type Event struct {
	ID        string          `json:"id"`
	Time      time.Time       `json:"time"`
	Actor     string          `json:"actor"`
	CompanyID string          `json:"companyId"`
	Action    string          `json:"action"`
	KeyID     *string         `json:"keyId"`
	WebhookID *string         `json:"webhookId"`
	Before    json.RawMessage `json:"before"`
	After     json.RawMessage `json:"after"`
}

// Log records and reads companies' audit events. Safe for concurrent use.
type Log struct {
	rdb       redis.UniversalClient
	repl      durable.Policy // the events' acknowledgements
	prefix    string
	retention time.Duration
	max       int
	now       func() time.Time
}

// New returns a Log over cfg.Redis.
func New(cfg Config) *Log {
	if cfg.Redis == nil {
		panic("audit: Config.Redis is required")
	}
	if strings.ContainsAny(cfg.Prefix, "{}") {
		panic("audit: Config.Prefix must not contain braces")
	}
	l := &Log{rdb: cfg.Redis, prefix: cfg.Prefix, retention: cfg.Retention, max: cfg.MaxPerCompany, now: cfg.Now,
		repl: durable.Policy{Replicas: cfg.MinReplicas, Target: cfg.ReplicaTarget, Timeout: cfg.ReplicaTimeout}}
	if l.prefix == "" {
		l.prefix = "audit:"
	}
	if l.retention <= 0 {
		l.retention = DefaultRetention
	}
	if l.max <= 0 {
		l.max = DefaultMaxPerCompany
	}
	if l.now == nil {
		l.now = time.Now
	}
	return l
}

func (l *Log) stream(company string) string { return l.prefix + "{" + company + "}" }

// appendScript adds one event to a stream (KEYS[1]) with an id of its time
// (ARGV[1], ms), or of the stream's last event when that is later (another
// instance's clock ahead, or an event recorded late), so ids always grow; it drops the
// events older than ARGV[2] (ms) and beyond the newest ARGV[3], and keeps the
// stream ARGV[4] ms after its last event. Exact trimming: events are rare
// (people changing keys), so it costs a deletion now and then.
var appendScript = redis.NewScript(`
local ms = ARGV[1]
local top = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
if #top > 0 then
  local last = string.match(top[1][1], '^(%d+)-')
  if tonumber(last) > tonumber(ms) then ms = last end
end
local args = {'XADD', KEYS[1], 'MINID', ARGV[2], ms .. '-*'}
for i = 5, #ARGV do args[#args + 1] = ARGV[i] end
local id = redis.call(unpack(args))
redis.call('XTRIM', KEYS[1], 'MAXLEN', ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return id`)

// secretLike is what the log refuses to keep, whatever a caller passes: an
// API key's secret or a webhook signing secret (invoicing.SecretPattern).
var secretLike = invoicing.SecretPattern

// HoldsSecret reports whether s holds what looks like an API key's secret
// or a webhook signing secret: what the log refuses to keep. Text that
// becomes part of a change (a key's name, an endpoint's URL) is refused with
// it before the change is made, so that no change happens that the log
// then refuses.
func HoldsSecret(s string) bool { return secretLike.MatchString(s) }

// Redacted is what Redact puts in place of a secret-shaped string.
const Redacted = "[redacted]"

// Redact returns b with every secret-shaped string replaced by Redacted,
// b itself when there is none. Replacing one in a JSON document keeps it
// valid: it is made of letters, digits, "_", "+" and "/" only. It is for
// states recorded before such text was refused at the edge: the log takes
// their changes, without the secret.
func Redact(b []byte) []byte {
	if !secretLike.Match(b) {
		return b
	}
	return secretLike.ReplaceAll(b, []byte(Redacted))
}

// CheckActor says why s cannot name an actor, if it cannot: it must be 1 to
// MaxActorLen bytes of printable UTF-8 (no control characters), with no
// character that hides or reverses text (invoicing.HiddenRune, as names
// are checked: a Hangul filler shows an empty actor), and nothing that
// looks like an API key or a webhook signing secret (an actor is shown on
// every screen and logged when a record fails). The error is ErrInvalid,
// as an invoicing.FieldError naming "actor" and why, for the caller to say
// in its own words.
func CheckActor(s string) error {
	lower := strings.ToLower(s)
	switch {
	case strings.TrimSpace(s) == "":
		return invoicing.InvalidField(ErrInvalid, "actor", "is empty")
	case len(s) > MaxActorLen:
		return invoicing.InvalidField(ErrInvalid, "actor", "is longer than %d bytes", MaxActorLen)
	case !utf8.ValidString(s) || strings.ContainsFunc(s, func(r rune) bool { return !unicode.IsPrint(r) && r != ' ' }):
		return invoicing.InvalidField(ErrInvalid, "actor", "must be printable text")
	case HoldsSecret(s) || strings.Contains(lower, "igw_") || strings.Contains(lower, "whsec_"):
		return invoicing.InvalidField(ErrInvalid, "actor", "%s", ActorSecretMessage)
	}
	if r, ok := invoicing.HiddenRune(s); ok {
		return invoicing.InvalidField(ErrInvalid, "actor", "%s", invoicing.HiddenMessage(r))
	}
	return nil
}

// ActorSecretMessage is what an actor that looks like a secret is told.
const ActorSecretMessage = "looks like an API key or a webhook signing secret"

// Record appends e to its company's log and returns it as recorded.
// ErrNotReplicated comes with the event: it is recorded, unconfirmed.
func (l *Log) Record(ctx context.Context, e Entry) (Event, error) {
	if err := e.check(); err != nil {
		return Event{}, err
	}
	at, args := l.appendArgs(e)
	stream := l.stream(e.CompanyID)
	var id string
	err := l.repl.Write(ctx, l.rdb, stream, func(c redis.Cmdable) (err error) {
		id, err = appendScript.Run(ctx, c, []string{stream}, args...).Text()
		return err
	})
	unconfirmed := errors.Is(err, durable.ErrNotAcknowledged)
	if err != nil && !unconfirmed {
		return Event{}, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	ev := Event{ID: id, Time: time.UnixMilli(at.UnixMilli()).UTC(), Actor: e.Actor, CompanyID: e.CompanyID,
		Action: e.Action, Before: e.Before, After: e.After}
	if e.KeyID != "" {
		ev.KeyID = &e.KeyID
	}
	if e.WebhookID != "" {
		ev.WebhookID = &e.WebhookID
	}
	if unconfirmed {
		return ev, fmt.Errorf("%w: %w", ErrNotReplicated, err)
	}
	return ev, nil
}

// appendArgs are appendScript's arguments for e, and its time.
func (l *Log) appendArgs(e Entry) (time.Time, []any) {
	now := l.now()
	at := e.Time
	if at.IsZero() {
		at = now
	}
	fields := []any{"time", strconv.FormatInt(at.UnixMilli(), 10), "actor", e.Actor, "action", e.Action}
	for _, f := range [...]struct {
		name string
		v    []byte
	}{{"key", []byte(e.KeyID)}, {"webhook", []byte(e.WebhookID)}, {"before", e.Before}, {"after", e.After}} {
		if len(f.v) > 0 {
			fields = append(fields, f.name, string(f.v))
		}
	}
	return at, append([]any{at.UnixMilli(), l.oldest(now), l.max, l.retention.Milliseconds()}, fields...)
}

func (e Entry) check() error {
	if err := CheckActor(e.Actor); err != nil {
		return err
	}
	if c, ok := invoicing.CanonicalUUID(e.CompanyID); !ok || c != e.CompanyID {
		return fmt.Errorf("%w: company %q", ErrInvalid, invoicing.Clip(e.CompanyID))
	}
	switch e.Action {
	case ActionKeyCreated, ActionKeyRolled, ActionKeyRevoked, ActionLimitsSet, ActionLimitsReset,
		ActionWebhookCreated, ActionWebhookUpdated, ActionWebhookDeleted, ActionWebhookSecretRotated,
		ActionWebhookReplayed, ActionWebhookRecovered, ActionWebhookTested, ActionStateImported:
	default:
		return fmt.Errorf("%w: action %q", ErrInvalid, invoicing.Clip(e.Action))
	}
	for _, v := range [][]byte{e.Before, e.After, []byte(e.KeyID), []byte(e.WebhookID)} {
		if secretLike.Match(v) {
			return fmt.Errorf("%w: it holds what looks like an API key's secret", ErrInvalid)
		}
	}
	for _, v := range []json.RawMessage{e.Before, e.After} {
		if len(v) > 0 && !json.Valid(v) {
			return fmt.Errorf("%w: before and after must be JSON", ErrInvalid)
		}
	}
	return nil
}

// oldest is the first millisecond still kept at now: an event exactly
// Retention old is gone.
func (l *Log) oldest(now time.Time) int64 { return now.Add(-l.retention).UnixMilli() + 1 }

// Read returns the company's events from since on (and within the
// retention), oldest first: about limit (1 to MaxRead) of them, as a page
// never ends inside a millisecond (a few more when several events share the
// last one). next is where the following page starts (the since of the
// next Read), zero when there is none.
func (l *Log) Read(ctx context.Context, companyID string, since time.Time, limit int) (events []Event, next time.Time, err error) {
	if c, ok := invoicing.CanonicalUUID(companyID); !ok || c != companyID {
		return nil, time.Time{}, fmt.Errorf("%w: company %q", ErrInvalid, invoicing.Clip(companyID))
	}
	if limit < 1 || limit > MaxRead {
		return nil, time.Time{}, fmt.Errorf("%w: limit %d, want 1 to %d", ErrInvalid, limit, MaxRead)
	}
	stream := l.stream(companyID)
	start := max(since.UnixMilli(), l.oldest(l.now()), 0)
	msgs, err := l.rdb.XRangeN(ctx, stream, strconv.FormatInt(start, 10), "+", int64(limit)+1).Result()
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	if len(msgs) > limit {
		// A page ends between two milliseconds, so that the next one can
		// start at a millisecond without repeating or skipping an event.
		cut := idMS(msgs[limit].ID)
		i := limit
		for i > 0 && idMS(msgs[i-1].ID) == cut {
			i--
		}
		if i == 0 { // more than limit events in one millisecond: all of them
			ms := strconv.FormatInt(cut, 10)
			if msgs, err = l.rdb.XRange(ctx, stream, ms, ms).Result(); err != nil {
				return nil, time.Time{}, fmt.Errorf("%w: %w", ErrUnavailable, err)
			}
			i = len(msgs)
		}
		msgs = msgs[:i]
		next = time.UnixMilli(idMS(msgs[i-1].ID) + 1).UTC()
	}
	events = make([]Event, 0, len(msgs))
	for _, m := range msgs {
		events = append(events, decode(companyID, m))
	}
	return events, next, nil
}

// idMS is the millisecond of a stream entry's id.
func idMS(id string) int64 {
	ms, _, _ := strings.Cut(id, "-")
	n, _ := strconv.ParseInt(ms, 10, 64)
	return n
}

// decode reads a stream entry back into an Event.
func decode(company string, m redis.XMessage) Event {
	str := func(name string) string { s, _ := m.Values[name].(string); return s }
	raw := func(name string) json.RawMessage {
		if s := str(name); s != "" {
			return json.RawMessage(s)
		}
		return nil
	}
	ev := Event{ID: m.ID, CompanyID: company, Actor: str("actor"), Action: str("action"), Before: raw("before"), After: raw("after")}
	if n, err := strconv.ParseInt(str("time"), 10, 64); err == nil {
		ev.Time = time.UnixMilli(n).UTC()
	}
	if k := str("key"); k != "" {
		ev.KeyID = &k
	}
	if w := str("webhook"); w != "" {
		ev.WebhookID = &w
	}
	return ev
}
