// Package history keeps the events' history in the gateway's own database
// (PostgreSQL, or SQLite in the demo; internal/sqldb opens it): the feed of
// every company's events, their bodies, the ids already found (marks), the
// deliveries to endpoints with their attempts, and detection's watermarks.
// Redis keeps only what must be fast and small (the delivery queue's due
// times and leases); what the queue holds can always be found here again.
//
// One interface, Store, two implementations behind New (one per engine),
// held to one conformance suite. It speaks its own small record types and
// invoicing's vocabulary, so that the events packages that detect and
// deliver import it and not the other way round.
//
// Positions. Each feed (a company in a mode) numbers its events with seq,
// a bigint that only grows: max(the feed's last seq + 1, the recording
// millisecond × 1000), assigned under a row lock of the feed's head
// (feed_heads), so that a feed's writers take turns and seq order is
// commit order: a reader that sees seq N has seen every earlier one, and a
// cursor never skips an event committed late. invoicing.FeedPosition{Ms,
// Seq} is seq Ms×1000+Seq, so the positions of the Redis streams that kept
// the feed before ("ms-n", n under 1000) continue exactly.
//
// Keys. Every table's key leads with the company (watermarks excepted),
// so that a distributed PostgreSQL (Citus) can shard by it. The tables
// that grow with time are partitioned by it on PostgreSQL (events by seq,
// daily; marks by when they were made, weekly; deliveries and attempts by
// when they were queued, daily), so that retention drops partitions; SQLite
// deletes in bounded batches.
package history

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/invoicing-ao/gateway/internal/sqldb"
	"github.com/invoicing-ao/gateway/invoicing"
)

// Store is the events' history.
type Store interface {
	// Record is a detection step's one write, in one transaction: the
	// watermark's compare-and-set, then the batch's events. An event whose
	// id was not found before (no mark younger than Remember) is recorded
	// in its feed, marked, and queued for each of its endpoints. One found
	// again is not recorded again; it is queued only for those of its
	// endpoints that have no delivery of it, and only while its mark is
	// younger than Retention (endpoints restored after a loss get what
	// they missed; a change edited weeks later is not sent again). When
	// the watermark moved, nothing is written and Moved is reported.
	Record(ctx context.Context, b Batch) (Recorded, error)

	// ReadFeed reads a page of a company's feed in a mode. A cursor past
	// which events were dropped (oldest first) is refused as expired, and
	// a position no feed can have as invalid: both are field errors
	// naming "cursor", of kind Invalid.
	ReadFeed(ctx context.Context, q invoicing.FeedQuery) (FeedPage, error)

	// Fetch reads the deliveries to make, with their bodies; one not found
	// (past the retention, or never) has Found false.
	Fetch(ctx context.Context, keys []DeliveryKey) ([]Fetched, error)
	// Complete records deliveries' outcomes; one past the retention is
	// left alone.
	Complete(ctx context.Context, outs []Outcome) error
	// Log reads a page of an endpoint's delivery log, newest first.
	Log(ctx context.Context, q LogQuery) (LogPage, error)
	// Delivery reads one delivery with its attempts; ErrNotFound when the
	// endpoint has none of the event within the retention.
	Delivery(ctx context.Context, k DeliveryKey) (Delivery, error)
	// Replay queues a delivery again, due now, its attempts counted afresh
	// (its earlier ones stay in its log): ErrNotFound when there is none,
	// ErrGone when its body is no longer kept.
	Replay(ctx context.Context, k DeliveryKey) (Queued, error)
	// Recover queues again, due now, a page of an endpoint's deliveries
	// queued since q.Since that failed or wait for a retry.
	Recover(ctx context.Context, q RecoverQuery) (Recovered, error)
	// AddTest queues a test delivery, whose body is its own.
	AddTest(ctx context.Context, d TestDelivery) (Queued, error)
	// Pending pages through the deliveries still to make, for a queue that
	// lost them: after the given one (nil: from the start), oldest first.
	Pending(ctx context.Context, after *Queued, limit int) ([]Queued, error)

	// Watermarks are a mode's detection positions, by stream.
	Watermarks(ctx context.Context, m invoicing.Mode) (map[string]string, error)
	// SetWatermarks sets watermarks, whatever they were (an import).
	SetWatermarks(ctx context.Context, m invoicing.Mode, marks map[string]string) error
	// Rewind sets streams' watermarks to Rewind: detection reads back its
	// recovery window.
	Rewind(ctx context.Context, m invoicing.Mode, streams ...string) error

	// Maintain makes the partitions ahead and drops (or, on SQLite,
	// deletes in bounded batches) what is past its window. Several
	// instances may call it; one works at a time.
	Maintain(ctx context.Context) (Maintenance, error)
	// Stats are the feeds' sizes: their number, their events within the
	// window, and the top largest.
	Stats(ctx context.Context, top int) (Stats, error)
}

// Rewind is the watermark that makes detection read back its window.
const Rewind = "rewind"

// Config is how long the history keeps what. Zero values are the defaults.
type Config struct {
	// FeedWindow is how long the feed keeps an event (and its body, which
	// deliveries read). Zero: 30 days. Never less than Retention.
	FeedWindow time.Duration
	// Retention is how long a delivery and its attempts are kept, and how
	// long an event found again may still be queued. Zero: 7 days.
	Retention time.Duration
	// Remember is how long an event's id is remembered, so that finding it
	// again does not record it again. Zero: 90 days. Never less than
	// FeedWindow.
	Remember time.Duration
	// Ahead is how far ahead of now partitions are made (PostgreSQL).
	// Zero: 2 days.
	Ahead time.Duration
	// MaxAttempts is how many attempts a delivery's log keeps (the
	// newest). Zero: 20.
	MaxAttempts int
	// Deletes bound SQLite's retention: rows a transaction deletes, and
	// transactions a Maintain makes per table. Zero: sqldb's defaults.
	Deletes sqldb.Batches
	// Now is the clock. Nil: time.Now.
	Now func() time.Time
}

func (c Config) withDefaults() Config {
	if c.Retention <= 0 {
		c.Retention = 7 * 24 * time.Hour
	}
	if c.FeedWindow <= 0 {
		c.FeedWindow = 30 * 24 * time.Hour
	}
	c.FeedWindow = max(c.FeedWindow, c.Retention)
	if c.Remember <= 0 {
		c.Remember = 90 * 24 * time.Hour
	}
	c.Remember = max(c.Remember, c.FeedWindow)
	if c.Ahead <= 0 {
		c.Ahead = 2 * 24 * time.Hour
	}
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = 20
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Errors of the history, each with its kind and the API's code (those of
// the events' API, whose answers they are).
var (
	// ErrUnavailable: the database cannot answer now.
	ErrUnavailable = invoicing.Define(invoicing.Error{Kind: invoicing.Unavailable, Code: "events_unavailable", Title: "Events unavailable",
		Detail: "The events' history cannot be read or written right now; retry later.", Message: "history: database unavailable"})
	// ErrInvalidQuery: a feed or log query refused, with the field named.
	ErrInvalidQuery = invoicing.Define(invoicing.Error{Kind: invoicing.Invalid, Code: "invalid_parameter", Title: "Invalid query parameter", Message: "history: invalid query"})
	// ErrNotFound: no such delivery within the retention.
	ErrNotFound = invoicing.Define(invoicing.Error{Kind: invoicing.NotFound, Code: "not_found", Title: "Resource not found", Detail: "No such resource.", Message: "history: delivery not found"})
	// ErrGone: the delivery's event is no longer kept.
	ErrGone = invoicing.Define(invoicing.Error{Kind: invoicing.Conflict, Code: "event_expired", Title: "Event no longer kept",
		Detail: "The event is older than the retention and cannot be sent again; sync with updatedSince instead.", Message: "history: event expired"})
)

// New is the store on db, whose schema (Migrations) must be applied. The
// store does not close db: its opener does, which may share it (the audit
// log keeps its own tables there).
func New(db *sqldb.DB, cfg Config) (Store, error) {
	c := &core{db: db, cfg: cfg.withDefaults()}
	switch db.Engine() {
	case sqldb.Postgres:
		s := &pgStore{core: c}
		c.ensure = s.ensure
		return s, nil
	case sqldb.SQLite:
		return &liteStore{core: c}, nil
	}
	return nil, fmt.Errorf("history: no store for the engine %q", db.Engine())
}

// core is what both engines' stores share: their configuration and the
// operations whose SQL both run alike.
type core struct {
	db  *sqldb.DB
	cfg Config
	// ensure makes the partitions missing (PostgreSQL; nil on SQLite): a
	// write refused for want of one makes them and is tried again.
	ensure func(context.Context) ([]string, error)
}

// partitioned runs a write, again once the partitions are made if it was
// refused for want of one.
func (c *core) partitioned(ctx context.Context, write func() error) error {
	err := write()
	if c.ensure != nil && sqldb.NoPartition(err) {
		if _, err = c.ensure(ctx); err == nil {
			err = write()
		}
	}
	return err
}

func (c *core) nowMs() int64 { return c.cfg.Now().UnixMilli() }

// kept is the earliest queueing time (ms) of a delivery still kept.
func (c *core) kept(now int64) int64 { return now - c.cfg.Retention.Milliseconds() }

// fail is err as the store returns it: ErrUnavailable when the database
// cannot serve now, else wrapped as a fault of ours.
func fail(err error) error {
	var known *invoicing.Error
	switch {
	case err == nil, errors.As(err, &known):
		return err
	case sqldb.Unavailable(err):
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return fmt.Errorf("history: %w", err)
}

var errInvalidOutcome = errors.New("history: an outcome needs a state or an attempt, and a retry its time")
