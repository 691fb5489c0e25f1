// Package audit keeps the record of who changed what in a company's keys,
// limits and webhook endpoints: in the gateway's own database (PostgreSQL,
// or SQLite in the demo; internal/sqldb opens it), kept 400 days and
// bounded in number per company. It stores what it is given (an actor, an
// action, the state before and after, as JSON) and reads it back in order;
// it knows nothing of keys, limits or HTTP, and refuses anything that looks
// like a key's secret.
//
// Ids. Each company's entries are numbered by seq, a bigint that only
// grows: max(the company's last seq + 1, the recording millisecond ×
// 1000), assigned under a row lock of the company's head (audit_heads), so
// that a company's writers take turns and seq order is commit order: a
// reader that sees an entry has seen every earlier one. The id shown is
// "ms-k" (seq = ms×1000 + k), the form of the Redis stream entries that
// kept the log before, whose ids carry over unchanged (upgrade.go).
//
// Keys and time. Both tables' keys lead with the company, so that a
// distributed PostgreSQL (Citus) can shard them by it. On PostgreSQL the
// entries are partitioned by seq in spans of 30 days, so that retention
// drops whole partitions; SQLite deletes in bounded batches (Maintain).
package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/invoicing-ao/gateway/internal/sqldb"
	"github.com/invoicing-ao/gateway/invoicing"
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
	MaxActorLen      = 200 // bytes
	DefaultRetention = 400 * 24 * time.Hour
	// DefaultMaxPerCompany is how many entries a company's log keeps at
	// most (the newest): ten times what Redis kept, about 60 MB of disk
	// at the most, far above what people changing keys make in 400 days,
	// and a bound on what a runaway script can cost.
	DefaultMaxPerCompany = 100_000
	MaxRead              = 1000 // events per Read
)

// Errors of the log.
var (
	// ErrUnavailable wraps the error of a database that cannot answer, or
	// that is not ready (Config.Ready).
	ErrUnavailable = invoicing.Define(invoicing.Error{Kind: invoicing.Unavailable, Code: "audit_unavailable", Title: "Audit log unavailable", Detail: "The audit log cannot be read right now; retry later.", Message: "audit: database unavailable"})
	// ErrInvalid: an entry or a read the log refuses (bad actor, action,
	// company, JSON, or what looks like a secret).
	ErrInvalid = errors.New("audit: invalid entry")
)

// Config configures a Log. Every zero value but DB has a working default.
type Config struct {
	// DB is the gateway's own database, with the log's schema
	// (Migrations) applied; required. The Log does not close it.
	DB *sqldb.DB
	// Ready, when not nil, says whether DB may be used now: nil once its
	// schema is known to be applied (a server that started before its
	// database answered waits for its migrations). Its error is answered
	// as ErrUnavailable.
	Ready func() error
	// Retention is how long an event is kept; zero means 400 days.
	Retention time.Duration
	// MaxPerCompany bounds each company's log; zero means
	// DefaultMaxPerCompany events (the oldest go first).
	MaxPerCompany int
	// Ahead is how far ahead of now partitions are made (PostgreSQL); zero
	// means 60 days (two partitions).
	Ahead time.Duration
	// Deletes bound SQLite's retention (Maintain): rows a transaction
	// deletes, and transactions a call makes. Zero: sqldb's defaults.
	Deletes sqldb.Batches
	// Now is the clock of event times and of retention; nil means time.Now.
	Now func() time.Time
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

// Event is a recorded Entry with its id ("ms-k", which orders a company's
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
	db        *sqldb.DB
	ready     func() error
	retention time.Duration
	max       int
	ahead     time.Duration
	deletes   sqldb.Batches
	now       func() time.Time
}

// New returns a Log over cfg.DB.
func New(cfg Config) *Log {
	if cfg.DB == nil {
		panic("audit: Config.DB is required")
	}
	l := &Log{db: cfg.DB, ready: cfg.Ready, retention: cfg.Retention, max: cfg.MaxPerCompany, ahead: cfg.Ahead,
		deletes: cfg.Deletes, now: cfg.Now}
	if l.retention <= 0 {
		l.retention = DefaultRetention
	}
	if l.max <= 0 {
		l.max = DefaultMaxPerCompany
	}
	if l.ahead <= 0 {
		l.ahead = 60 * 24 * time.Hour
	}
	if l.now == nil {
		l.now = time.Now
	}
	return l
}

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

// Record appends e to its company's log and returns it as recorded, once
// the database has committed it.
func (l *Log) Record(ctx context.Context, e Entry) (Event, error) {
	if err := e.check(); err != nil {
		return Event{}, err
	}
	if err := l.usable(); err != nil {
		return Event{}, err
	}
	var ev Event
	err := l.partitioned(ctx, func() error {
		return l.db.Tx(ctx, func(q sqldb.Querier) (err error) {
			ev, err = l.insert(ctx, q, e)
			return err
		})
	})
	if err != nil {
		return Event{}, fail(err)
	}
	return ev, nil
}

// Ready reports whether the log can record now: its database answers and
// its schema is applied. A change is refused before it is made when it
// cannot (admin), rather than made and left out of the log.
func (l *Log) Ready(ctx context.Context) error {
	if err := l.usable(); err != nil {
		return err
	}
	return fail(l.db.Ping(ctx))
}

// usable is ErrUnavailable while Config.Ready says the database may not be
// used yet.
func (l *Log) usable() error {
	if l.ready == nil {
		return nil
	}
	if err := l.ready(); err != nil {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return nil
}

// fail is err as the log returns it: ErrUnavailable when the database
// cannot serve now, else wrapped as a fault of ours.
func fail(err error) error {
	var known *invoicing.Error
	switch {
	case err == nil, errors.Is(err, ErrInvalid), errors.As(err, &known):
		return err
	case sqldb.Unavailable(err):
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return fmt.Errorf("audit: %w", err)
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
		if len(v) > 0 && (!json.Valid(v) || !utf8.Valid(v)) {
			return fmt.Errorf("%w: before and after must be JSON", ErrInvalid)
		}
	}
	for _, id := range []string{e.KeyID, e.WebhookID} {
		if !utf8.ValidString(id) || strings.ContainsFunc(id, unicode.IsControl) {
			return fmt.Errorf("%w: an id must be printable text", ErrInvalid)
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
	if err := l.usable(); err != nil {
		return nil, time.Time{}, err
	}
	start := max(since.UnixMilli(), l.oldest(l.now()), 0)
	start = min(start, maxMs) // a since beyond any id reads nothing
	r := l.db.Read()
	evs, err := l.page(ctx, r, companyID, start*perMs, 1<<63-1, limit+1)
	if err != nil {
		return nil, time.Time{}, fail(err)
	}
	if len(evs) > limit {
		// A page ends between two milliseconds, so that the next one can
		// start at a millisecond without repeating or skipping an event.
		cut := evs[limit].seq / perMs
		i := limit
		for i > 0 && evs[i-1].seq/perMs == cut {
			i--
		}
		if i == 0 { // more than limit events in one millisecond: all of them
			if evs, err = l.page(ctx, r, companyID, cut*perMs, (cut+1)*perMs, perMs); err != nil {
				return nil, time.Time{}, fail(err)
			}
			i = len(evs)
		}
		evs = evs[:i]
		next = time.UnixMilli(evs[i-1].seq/perMs + 1).UTC()
	}
	events = make([]Event, len(evs))
	for i, e := range evs {
		events[i] = e.Event
	}
	return events, next, nil
}
