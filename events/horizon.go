package events

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/invoicing-ao/gateway/invoicing"
)

// Detection by commit, not by clock. A row's change time is its
// transaction's start (now()), and a transaction may commit long after
// later ones: a read up to the clock would pass its rows. Each tick reads
// what PostgreSQL says is in flight (Source.InFlight) and keeps two
// positions a stream:
//
//   - how far its read has gone (ahead.pos): the committed rows up to the
//     clock less a margin are read and queued at once, whatever is open;
//   - the watermark in Redis, moved with the queueing by compare-and-set:
//     everything before it is queued. It stays at the start of the oldest
//     transaction seen open behind pos, so that a restart, or another
//     instance taking the lead, reads again from there.
//
// A transaction seen open with its start behind pos is followed; when a
// reading no longer lists it, it has ended, and the rows of its start
// (updated_at = its now()) are read once, by that time alone: a long
// transaction holds no other change back, and reading faster never means
// reading everything again. One rolled back wrote nothing visible: the read
// finds nothing.

// A span is when a followed transaction may have started: [lo, hi).
type span struct{ lo, hi time.Time }

// ahead is one stream's progress as this detector knows it.
type ahead struct {
	raw     string             // the watermark, as this detector last read or wrote it
	known   bool               // raw is what Redis holds, as far as this detector knows
	pos     invoicing.Position // how far the stream's read has gone
	pending []span             // transactions ended, whose rows are behind pos: read once
	// readTo is the bound of the last read that reached its reading's
	// horizon: a row a later read finds for the first time committed after
	// that read, or has a time at or after it. Zero: unknown.
	readTo time.Time
	// fresh: started from no watermark, and not yet read up to a horizon
	// (recencyOf).
	fresh bool
}

// horizon is what a mode's change detection knows between ticks.
type horizon struct {
	sight   invoicing.Sight
	told    bool
	last    time.Time       // the previous reading's clock
	trusted bool            // last was this detector's reading just before this one
	skew    time.Duration   // the database's clock less this process's, at the last reading
	open    map[string]span // the transactions followed
	streams map[string]*ahead
}

func newHorizon() *horizon {
	hz := &horizon{open: map[string]span{}, streams: map[string]*ahead{}}
	for _, st := range streams {
		hz.streams[st.name] = &ahead{}
	}
	return hz
}

// lagOf is how far behind the database's clock a reading lets detection
// read: the margin where every open transaction is shown (or there is one
// writer), else Settle (those not shown until their first write).
func (d *detector) lagOf(s invoicing.Sight) time.Duration {
	if s == invoicing.SightWriters {
		return d.settle
	}
	return d.margin
}

// observe takes a reading of what is in flight (at local, this process's
// clock): it starts again from their watermark the streams that another
// detector, or an import, moved; it notes the transactions that ended since
// the last reading (each stream reads their rows once) and those that may
// write behind the streams' positions; and it returns how far the streams
// may read now.
func (d *detector) observe(m invoicing.Mode, hz *horizon, h invoicing.Horizon, raws []string, local time.Time) time.Time {
	d.tell(m, hz, h)
	for i, st := range streams {
		if a := hz.streams[st.name]; !a.known || a.raw != raws[i] {
			hz.streams[st.name] = d.restart(m, st.name, raws[i], h.Now)
			hz.trusted = false
		}
	}
	lag := d.lagOf(h.Sight)
	to := h.Now.Add(-lag)
	floor := to
	for _, a := range hz.streams {
		floor = minTime(floor, *a.pos.At)
	}
	seen := make(map[string]bool, len(h.Open))
	for _, tx := range h.Open {
		seen[tx.ID] = true
		if _, ok := hz.open[tx.ID]; ok {
			continue
		}
		switch {
		case !tx.Start.IsZero():
			// Followed once a stream may read past its start.
			if tx.Start.Before(to) {
				hz.open[tx.ID] = span{tx.Start, tx.Start.Add(time.Microsecond)}
			}
		case hz.trusted:
			// Not listed last time: its first write came after that reading,
			// and it began at most Settle before it (or it is a late writer,
			// which the sweep finds).
			hz.open[tx.ID] = span{hz.last.Add(-lag), h.Now.Add(time.Microsecond)}
		default:
			hz.open[tx.ID] = span{floor, h.Now.Add(time.Microsecond)}
		}
	}
	for id, sp := range hz.open {
		if !seen[id] {
			delete(hz.open, id)
			for _, a := range hz.streams {
				a.pending = append(a.pending, sp)
			}
		}
	}
	hz.last, hz.trusted, hz.skew = h.Now, true, h.Now.Sub(local)
	return to
}

// restart is a stream's progress read from its watermark raw: from it, or,
// with none, from Recovery before the database's clock now.
func (d *detector) restart(m invoicing.Mode, stream, raw string, now time.Time) *ahead {
	pos, ok := decodeMark(raw)
	if !ok {
		// No watermark: the first start, the pipeline's state lost, or an
		// import that restored endpoints (markRewind). Look back Recovery;
		// what was queued before has the same ids. The markers were lost
		// with the watermark: an issue or a creation is reported again from
		// the start of that window, not before it.
		pos = position(now.Add(-d.recovery), "")
		d.logger.Info("events: no watermark (a first start, the pipeline's state lost, or endpoints restored by an import): detection reads back its recovery window",
			"mode", m, "stream", stream, "from", *pos.At, "rewound", raw == markRewind, "unreadableMark", raw != "" && raw != markRewind)
	}
	return &ahead{raw: raw, known: true, pos: pos, fresh: !ok}
}

// tell logs, at the first reading and when it changes, what the database
// shows of its transactions, and so what detection can promise.
func (d *detector) tell(m invoicing.Mode, hz *horizon, h invoicing.Horizon) {
	if hz.told && hz.sight == h.Sight {
		return
	}
	hz.told, hz.sight = true, h.Sight
	switch h.Sight {
	case invoicing.SightAll:
		d.logger.Info("events: the database shows every open transaction and its start (pg_read_all_stats): detection reads "+d.margin.String()+
			" behind its clock, and a transaction that commits late is read at its commit", "mode", m)
	case invoicing.SightWriters:
		d.logger.Warn("events: the database role lacks pg_monitor (pg_read_all_stats): detection sees a transaction only from its first write, not its start, so it reads "+
			d.settle.String()+" behind the database's clock; a transaction that first writes later than that after it began is found by the sweep (within "+
			(d.sweep/2).String()+"); grant pg_monitor for events within a second (docs/operators.md)", "mode", m)
	default:
		d.logger.Info("events: the database has one writer (SQLite): detection reads "+d.margin.String()+" behind its clock", "mode", m)
	}
}

// follow reads one stream at a tick: the rows of the transactions that
// ended, then what was committed up to to.
func (d *detector) follow(ctx context.Context, src Source, m invoicing.Mode, st stream, t *targets, hz *horizon, to time.Time) error {
	a := hz.streams[st.name]
	if err := d.catchUp(ctx, src, m, st, t, hz, a); err != nil || !a.known {
		return err
	}
	return d.readAhead(ctx, src, m, st, t, hz, a, to)
}

// catchUp reads, once, the rows of the ended transactions that are behind
// the stream's position: by their start alone (a tenth of a millisecond of
// rows), or, for a transaction seen only by its writes, from the reading
// before its first.
func (d *detector) catchUp(ctx context.Context, src Source, m invoicing.Mode, st stream, t *targets, hz *horizon, a *ahead) error {
	if !d.reads(t) {
		a.pending = nil
		return nil
	}
	key := d.l.watermark(m, st.name)
	a.pending = merge(a.pending, d.tick)
	for len(a.pending) > 0 {
		sp := a.pending[0]
		end := minTime(sp.hi, a.pos.At.Add(time.Microsecond)) // the rows at pos's own time may be behind it
		q := invoicing.ChangeQuery{Companies: t.companies, All: d.feedOn(), From: sp.lo, To: end, Limit: pageSize}
		for sp.lo.Before(end) {
			start := time.Now()
			// It was open at the last reading: it committed after it.
			evs, rows, err := st.read(ctx, src, m, q, recency{from: d.recentFrom(sp.lo)}, hz.last)
			if err != nil {
				return fmt.Errorf("events: %s %s, a transaction's changes: %w", m, st.name, err)
			}
			if _, moved, err := d.queueRead(ctx, m, "changes", st.name, t, hz.skew, start, evs, move{key, a.raw, a.raw}); err != nil || moved {
				a.known = false
				return err
			}
			if len(rows) < pageSize {
				break
			}
			q.After = &rows[len(rows)-1]
		}
		a.pending = a.pending[1:]
	}
	return nil
}

// readAhead reads and queues the committed rows from the stream's position
// up to to, page by page, each page with its watermark's move in one
// script. It stops early (without error) when another detector moved the
// watermark.
func (d *detector) readAhead(ctx context.Context, src Source, m invoicing.Mode, st stream, t *targets, hz *horizon, a *ahead, to time.Time) error {
	key := d.l.watermark(m, st.name)
	recent, err := d.recencyOf(ctx, m, a)
	if err != nil {
		return err
	}
	floor := a.readTo
	for a.pos.At.Before(to) {
		start := time.Now()
		var evs []Event
		var rows []invoicing.Position
		if d.reads(t) {
			q := invoicing.ChangeQuery{Companies: t.companies, All: d.feedOn(), From: *a.pos.At, To: to, Limit: pageSize}
			if a.pos.ID != "" {
				q.After = &a.pos
			}
			if evs, rows, err = st.read(ctx, src, m, q, recent, floor); err != nil {
				return fmt.Errorf("events: %s %s: %w", m, st.name, err)
			}
		}
		next := position(to, "")
		if len(rows) == pageSize {
			next = rows[len(rows)-1]
		}
		mark := encodeMark(hz.hold(next))
		if len(evs) == 0 && mark == a.raw {
			a.pos = next // held by a transaction in flight: nothing to write
			continue
		}
		if _, moved, err := d.queueRead(ctx, m, "changes", st.name, t, hz.skew, start, evs, move{key, a.raw, mark}); err != nil || moved {
			a.known = false
			return err
		}
		a.raw, a.pos = mark, next
	}
	a.readTo, a.fresh = to, false
	return nil
}

// recencyOf is which issues (or creations) a read from a's position
// reports: with no watermark, those from the start of the recovery window
// (the markers were lost with it), not before; else Recovery before the
// position, and after an import not those before its resume point
// (recency).
func (d *detector) recencyOf(ctx context.Context, m invoicing.Mode, a *ahead) (recency, error) {
	if a.fresh {
		return recency{from: *a.pos.At}, nil
	}
	res, err := d.resumed(ctx, m)
	if err != nil {
		return recency{}, err
	}
	return recency{from: d.recentFrom(*a.pos.At), floor: res.at, since: res.since}, nil
}

// recordAhead writes, for the metrics, how far the streams whose
// watermark a transaction in flight holds back have read: their lag is
// that read's, not the watermark's (a transaction open an hour holds no
// change back but its own). Nothing is written while none is held.
func (d *detector) recordAhead(ctx context.Context, m invoicing.Mode, hz *horizon) error {
	var kv []any
	for _, st := range streams {
		if a := hz.streams[st.name]; a.known && a.raw != encodeMark(a.pos) {
			kv = append(kv, d.l.ahead(m, st.name), encodeMark(a.pos))
		}
	}
	if len(kv) == 0 {
		return nil
	}
	return unavailable(d.rdb.MSet(ctx, kv...).Err())
}

// hold is the watermark for a stream read up to next: next, or the start
// of the earliest transaction followed, if earlier (its rows are not read
// yet).
func (hz *horizon) hold(next invoicing.Position) invoicing.Position {
	w := next
	for _, sp := range hz.open {
		if !sp.lo.After(*w.At) {
			w = position(sp.lo, "")
		}
	}
	return w
}

// queueRead routes and queues the events of a read, with the move mv of a
// watermark, and reports moved when another detector moved it first or the
// endpoints changed since t was read. Each event's commit (the read's
// proxy, in the database's clock) is put on this process's clock (skew:
// the database's less this process's); idle deliveries are woken when
// there are new events.
func (d *detector) queueRead(ctx context.Context, m invoicing.Mode, loop, stream string, t *targets, skew time.Duration, start time.Time, evs []Event, mv move) (added int, moved bool, err error) {
	for i := range evs {
		if !evs[i].commit.IsZero() {
			evs[i].commit = evs[i].commit.Add(-skew)
		}
	}
	routed := t.routeAll(evs, d.feedOn())
	pctx, end := d.traceDetect(ctx, m, loop, stream, start, len(routed))
	added, moved, err = d.queue.enqueue(pctx, t, mv, routed)
	end(added, moved, err)
	if added > 0 {
		d.wakeDeliveries()
	}
	return added, moved, err
}

// oldest is the earliest start of the transactions followed; zero for
// none.
func (hz *horizon) oldest() time.Time {
	var at time.Time
	for _, sp := range hz.open {
		if at.IsZero() || sp.lo.Before(at) {
			at = sp.lo
		}
	}
	return at
}

// merge sorts spans and joins those that overlap, or are less than slack
// apart: one read of the few rows between two transactions' starts costs
// less than a read of each.
func merge(spans []span, slack time.Duration) []span {
	slices.SortFunc(spans, func(a, b span) int { return a.lo.Compare(b.lo) })
	out := spans[:0]
	for _, sp := range spans {
		if n := len(out); n > 0 && !sp.lo.After(out[n-1].hi.Add(slack)) {
			out[n-1].hi = maxTime(out[n-1].hi, sp.hi)
			continue
		}
		out = append(out, sp)
	}
	return out
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
