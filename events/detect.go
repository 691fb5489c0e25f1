package events

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/invoicing-ao/gateway/invoicing"
)

// pageSize is how many rows a detector reads, and queues, at a time.
const pageSize = 500

// A stream is one kind of change the detector follows, with its own
// watermark: what it reads and the events a page of it makes.
type stream struct {
	name string
	// read reads a page; floor is the earliest its rows can have committed,
	// as far as detection knows (zero: their own times).
	read func(ctx context.Context, src Source, m invoicing.Mode, q invoicing.ChangeQuery, recent recency, floor time.Time) ([]Event, []invoicing.Position, error)
}

// streams are the kinds of change the detector follows: which of Source's
// reads gives their rows, the events a row makes (recent: see recentFrom),
// and the id a row's position names.
var streams = []stream{
	streamOf("invoices", Source.ChangedInvoices, invoiceEvents, invoiceID),
	streamOf("clients", Source.ChangedClients, clientEvents, clientID),
	streamOf("transmissions", Source.ChangedTransmissions, atMostOne(transmissionEvent), invoiceID),
}

func invoiceID(i *invoicing.Invoice) string { return i.ID }
func clientID(c *invoicing.Client) string   { return c.ID }

// streamOf makes a stream of rows of T. Every row read moves the position,
// whether it makes an event or not; each event carries its row's resource
// and the earliest its row can have committed: its time, or floor if later.
func streamOf[T any](name string, fetch func(Source, context.Context, invoicing.ChangeQuery) ([]invoicing.Changed[T], error),
	events func(invoicing.Mode, invoicing.Changed[T], time.Time) []Event, id func(*T) string) stream {
	read := func(ctx context.Context, src Source, m invoicing.Mode, q invoicing.ChangeQuery, recent recency, floor time.Time) ([]Event, []invoicing.Position, error) {
		rows, err := fetch(src, ctx, q)
		if err != nil {
			return nil, nil, err
		}
		var evs []Event
		pos := make([]invoicing.Position, len(rows))
		for i, r := range rows {
			e, err := withData(events(m, r, recent.of(r.At)), &r.Resource)
			if err != nil {
				return nil, nil, err
			}
			for j := range e {
				e[j].commit = maxTime(r.At, floor)
			}
			evs, pos[i] = append(evs, e...), position(r.At, id(&r.Resource))
		}
		return evs, pos, nil
	}
	return stream{name: name, read: read}
}

// atMostOne is the events of a row that makes one or none, whatever recent.
func atMostOne[T any](f func(invoicing.Mode, invoicing.Changed[T]) (Event, bool)) func(invoicing.Mode, invoicing.Changed[T], time.Time) []Event {
	return func(m invoicing.Mode, r invoicing.Changed[T], _ time.Time) []Event {
		if e, ok := f(m, r); ok {
			return []Event{e}
		}
		return nil
	}
}

func position(at time.Time, id string) invoicing.Position {
	t := at.UTC()
	return invoicing.Position{At: &t, ID: id}
}

// A watermark is "<Unix µs>|<id>": everything before that position of its
// stream has been queued; markRewind (an import restored endpoints, which
// detection with no endpoint may have passed by) reads back the recovery
// window as no watermark does. A detector that read no watermark before the
// import cannot move it (its compare-and-set expects none), nor can one
// that read the endpoints before it (the import moved their version, which
// the same step checks: enqueueScript).
const markRewind = "rewind"

func encodeMark(p invoicing.Position) string {
	return strconv.FormatInt(p.At.UnixMicro(), 10) + "|" + p.ID
}

func decodeMark(s string) (invoicing.Position, bool) {
	us, id, ok := strings.Cut(s, "|")
	n, err := strconv.ParseInt(us, 10, 64)
	if !ok || err != nil {
		return invoicing.Position{}, false
	}
	return position(time.UnixMicro(n), id), true
}

// mark reads a watermark; "" when there is none.
func (d *detector) mark(ctx context.Context, key string) (string, error) {
	v, err := d.rdb.Get(ctx, key).Result()
	if errors.Is(err, redis.Nil) {
		return "", nil
	}
	return v, unavailable(err)
}

// recentFrom is the earliest issue (or creation) time that a read from
// position from reports as an invoice.issued (or client.created): Recovery
// before that position, however far behind the clock it is. A row issued and changed again before
// detection read it (every instance stopped, Redis out of reach, a
// backlog read page by page), or recorded with an issue time earlier than
// its commit, is then still reported when detection reaches it, however
// late; one whose issue was reported already makes the same id, which its
// marker (markers.go) makes a no-op.
func (d *detector) recentFrom(from time.Time) time.Time { return from.Add(-d.recovery) }

// sweepOnce reads every stream back Sweep from to (no further back than an
// import's resume point: resumedScript) and queues what is not queued yet: a
// change that its stream passed, which following the
// transactions in flight did not catch (a writer that records another time
// than its transaction's start, or, without pg_monitor, one that first
// wrote later than Settle after its start). It moves no watermark.
// stale reports that the endpoints changed since t was read: the sweep
// stopped, to be made again with them read again.
func (d *detector) sweepOnce(ctx context.Context, src Source, m invoicing.Mode, t *targets, dbNow, to time.Time) (stale bool, err error) {
	if !d.reads(t) {
		return false, nil
	}
	from := to.Add(-d.sweep)
	res, err := d.resumed(ctx, m)
	if err != nil {
		return false, err
	} else if res.at.After(from) {
		from = res.at // after an import: what came before was delivered (resume.go)
	}
	if !from.Before(to) {
		return false, nil
	}
	for _, st := range streams {
		q := invoicing.ChangeQuery{Companies: t.companies, All: d.feedOn(), From: from, To: to, Limit: pageSize}
		for {
			start := time.Now()
			evs, rows, err := st.read(ctx, src, m, q, recency{from: d.recentFrom(q.From), floor: res.at, since: res.since}, time.Time{})
			if err != nil {
				return false, fmt.Errorf("events: sweep %s %s: %w", m, st.name, err)
			}
			// Measured from the rows' own times, on the database's clock.
			n, stale, err := d.queueRead(ctx, m, "sweep", st.name, t, 0, start, evs, move{})
			if err != nil || stale {
				return stale, err
			} else if n > 0 {
				d.logger.Info("events: the sweep found changes committed late", "mode", m, "stream", st.name, "events", n)
			}
			if len(rows) < pageSize {
				break
			}
			last := rows[len(rows)-1]
			q.After = &last
		}
	}
	return false, nil
}

// overdue queues invoice.overdue for the invoices whose due date passed
// since its watermark: when the date turns in Luanda, for every such
// invoice, once. The watermark is "<from>|<to>|<id>": due dates before from
// are done; a batch for the dates [from, to) is done up to id (to is kept,
// so that a batch the date turns during ends where it began); "<from>||"
// when no batch is under way.
func (d *detector) overdue(ctx context.Context, src Source, m invoicing.Mode, t *targets, dbNow time.Time) error {
	key := d.l.watermark(m, "overdue")
	raw, err := d.mark(ctx, key)
	if err != nil {
		return err
	}
	today := dbNow.In(luanda).Format("2006-01-02")
	parts := strings.Split(raw, "|")
	if len(parts) != 3 {
		parts = []string{dbNow.Add(-d.recovery).In(luanda).Format("2006-01-02"), "", ""}
	}
	from, to, after := parts[0], parts[1], parts[2]
	for {
		if to == "" {
			if from >= today {
				return nil
			}
			to = today
		}
		start := time.Now()
		var evs []Event
		full := false
		if d.reads(t) {
			rows, err := src.OverdueInvoices(ctx, invoicing.OverdueQuery{Companies: t.companies, All: d.feedOn(), From: from, To: to, AfterID: after, Limit: pageSize})
			if err != nil {
				return fmt.Errorf("events: %s overdue: %w", m, err)
			}
			for _, r := range rows {
				if e, ok := overdueEvent(m, r); ok {
					withE, err := withData([]Event{e}, &r.Resource)
					if err != nil {
						return err
					}
					evs = append(evs, withE...)
				}
			}
			if full = len(rows) == pageSize; full {
				after = rows[len(rows)-1].Resource.ID
			}
		}
		next := to + "||"
		if full {
			next = from + "|" + to + "|" + after
		}
		routed := t.routeAll(evs, d.feedOn())
		pctx, end := d.traceDetect(ctx, m, "overdue", "overdue", start, len(routed))
		added, moved, err := d.queue.enqueue(pctx, t, move{key, raw, next}, routed)
		end(added, moved, err)
		if err != nil || moved {
			return err
		}
		raw = next
		if !full {
			from, to, after = to, "", ""
		}
	}
}
