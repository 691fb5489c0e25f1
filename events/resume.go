package events

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/invoicing-ao/gateway/invoicing"
)

// Where detection resumes after an import. An import that restores
// endpoints into a Redis that lost them must make detection read again
// what it passed by with no endpoint, and what was queued and not yet
// delivered. Without more, it reads back the whole recovery window
// (markRewind), and every event of that window that had been delivered is
// delivered again. An export says how far back is enough: its resume
// point, per mode, is the earliest of the change streams' watermarks and
// of the times of the events still to deliver (pending, or being
// delivered) when it was taken, and no earlier than Config.Recovery before
// it (what a rewind reads back). Every event of a change before that point
// had been delivered (or had failed for good) by then, and every later
// change is read again: a change's row is read by its last change's time,
// which is never before the event's. The import moves each change stream's
// watermark back to the resume point, never forward (a Redis restored from
// a snapshot older than the export has its own, earlier watermark, whose
// queue matches it), and keeps it for the sweep and the issues (resumedScript). The
// overdue invoices resume the same way at a due date: the overdue
// watermark's, or the earliest due date of an invoice.overdue still to
// deliver.
//
// What is still sent again: the events of the changes after the resume
// point that had been delivered (between the export's watermarks and the
// receiver, a few seconds), and those of the changes made between the
// export and the loss. They come under the same webhook-id, which
// receivers drop. What may be missed: a change committed later than
// Config.Settle after its time, just before the export, which the sweep
// had not reached yet.

// resumePoints are the modes' resume points, from the endpoints by mode
// (their ids): none for a mode whose change streams have no watermark. The
// overdue invoices have their own (resumeFrom.overdue): a due date, not a
// time.
func (es *Webhooks) resumePoints(ctx context.Context, ids map[invoicing.Mode][]string) (map[invoicing.Mode]resumeFrom, error) {
	out := map[invoicing.Mode]resumeFrom{}
	for m, eps := range ids {
		// The watermarks first: an event queued after they were read is of
		// a row at or after them.
		at, ok, err := es.watermarksLow(ctx, m)
		if err != nil {
			return out, err
		}
		due, dueOK, err := es.overdueLow(ctx, m)
		if err != nil {
			return out, err
		}
		pending, pendingDue, err := es.pendingLow(ctx, eps)
		if err != nil {
			return out, err
		}
		// No further back than a rewind reads: an endpoint disabled for
		// days would otherwise have every event of those days sent again
		// to every endpoint restored.
		floor := es.now().Add(-es.recovery)
		var r resumeFrom
		if ok {
			if !pending.IsZero() && pending.Before(at) {
				at = pending
			}
			r.at = later(at, floor).UTC()
		}
		if dueOK {
			if pendingDue != "" && pendingDue < due {
				due = pendingDue
			}
			r.overdue = max(due, floor.In(luanda).Format(time.DateOnly))
		}
		if ok || dueOK {
			out[m] = r
		}
	}
	return out, nil
}

// resumeFrom is where a mode's detection resumes: the change streams at a
// time (zero: none), the overdue invoices at a due date ("": none).
type resumeFrom struct {
	at      time.Time
	overdue string
}

// watermarksLow is the earliest of the mode's change streams' positions;
// ok is false when one has none (a first start, a rewind under way).
func (es *Webhooks) watermarksLow(ctx context.Context, m invoicing.Mode) (time.Time, bool, error) {
	var low time.Time
	for _, st := range streams {
		raw, err := es.rdb.Get(ctx, es.l.watermark(m, st.name)).Result()
		if errors.Is(err, redis.Nil) {
			return time.Time{}, false, nil
		} else if err != nil {
			return time.Time{}, false, unavailable(err)
		}
		p, ok := decodeMark(raw)
		if !ok {
			return time.Time{}, false, nil
		}
		if low.IsZero() || p.At.Before(low) {
			low = *p.At
		}
	}
	return low, true, nil
}

// overdueLow is the first due date whose invoices' invoice.overdue may not
// have been queued (the overdue watermark's first part: the dates before it
// are done); ok is false when there is none.
func (es *Webhooks) overdueLow(ctx context.Context, m invoicing.Mode) (string, bool, error) {
	raw, err := es.rdb.Get(ctx, es.l.watermark(m, "overdue")).Result()
	if errors.Is(err, redis.Nil) {
		return "", false, nil
	} else if err != nil {
		return "", false, unavailable(err)
	}
	from, _, _ := strings.Cut(raw, "|")
	if _, err := time.Parse(time.DateOnly, from); err != nil {
		return "", false, nil // a rewind under way
	}
	return from, true, nil
}

// pendingLow is the earliest time of the events the endpoints have still
// to receive (queued or leased), zero when none; and the earliest due date
// of the invoice.overdue among them, "" when none.
func (es *Webhooks) pendingLow(ctx context.Context, eps []string) (low time.Time, lowDue string, err error) {
	for _, ep := range eps {
		pipe := es.rdb.Pipeline()
		q, l := pipe.ZRange(ctx, es.l.queue(ep), 0, -1), pipe.ZRange(ctx, es.l.lease(ep), 0, -1)
		if _, err := pipe.Exec(ctx); err != nil {
			return time.Time{}, "", unavailable(err)
		}
		ids := append(q.Val(), l.Val()...)
		for len(ids) > 0 {
			chunk := ids[:min(len(ids), 500)]
			ids = ids[len(chunk):]
			keys := make([]string, len(chunk))
			for i, id := range chunk {
				keys[i] = es.l.message(id)
			}
			vals, err := es.rdb.MGet(ctx, keys...).Result()
			if err != nil {
				return time.Time{}, "", unavailable(err)
			}
			for _, v := range vals {
				var ev Event
				s, ok := v.(string)
				if !ok || json.Unmarshal([]byte(s), &storedEvent{Event: &ev}) != nil {
					continue
				}
				if low.IsZero() || ev.Time.Before(low) {
					low = ev.Time
				}
				var inv struct {
					DueDate string `json:"dueDate"`
				}
				if ev.Type == InvoiceOverdue && json.Unmarshal(ev.Data, &inv) == nil && inv.DueDate != "" && (lowDue == "" || inv.DueDate < lowDue) {
					lowDue = inv.DueDate
				}
			}
		}
	}
	return low, lowDue, nil
}

// resumeScript moves a change stream's watermark (KEYS[1]) back to
// ARGV[1] (a mark, at ARGV[2] µs), never forward: it is set when absent,
// unreadable or later, and kept when earlier or a rewind (which reads
// back further).
var resumeScript = redis.NewScript(`
local cur = redis.call('GET', KEYS[1])
if cur == 'rewind' then return 0 end
local us = cur and tonumber(string.match(cur, '^(%d+)|'))
if us and us <= tonumber(ARGV[2]) then return 0 end
redis.call('SET', KEYS[1], ARGV[1])
return 1`)

// overdueResumeScript moves the overdue watermark (KEYS[1]) back to the
// due date ARGV[1] ("<date>||": the dates before it are done), never
// forward: kept when its first date is earlier, or a rewind. Dates are
// YYYY-MM-DD, so that their order is the strings'.
var overdueResumeScript = redis.NewScript(`
local cur = redis.call('GET', KEYS[1])
if cur == 'rewind' then return 0 end
local from = cur and string.match(cur, '^(%d%d%d%d%-%d%d%-%d%d)|')
if from and from <= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[1] .. '||')
return 1`)

// resumedScript keeps an import's resume point (KEYS[1]: ARGV[1] µs) and
// when the export was taken (ARGV[2] µs) for ARGV[3] ms, unless an earlier
// resume point is kept. Every change before the resume point had been
// queued and delivered, and the markers that would make its events no-ops
// were lost with the Redis the import restores: read again, they would be
// sent a second time. So the sweep reads back nothing before it, and a row
// changed after the export reports no issue (or creation) before it
// (recency). Once detection is Config.Recovery past it, it no longer
// matters, and it expires.
var resumedScript = redis.NewScript(`
local cur = redis.call('GET', KEYS[1])
local us = cur and tonumber(string.match(cur, '^(%d+)|'))
if us and us <= tonumber(ARGV[1]) then return 0 end
redis.call('SET', KEYS[1], ARGV[1] .. '|' .. ARGV[2], 'PX', ARGV[3])
return 1`)

// resumed is what an import left of its resume point in a mode (zero
// times: none).
type resumed struct{ at, since time.Time }

// resumed reads what an import left in mode m (resumedScript).
func (d *detector) resumed(ctx context.Context, m invoicing.Mode) (resumed, error) {
	v, err := d.rdb.Get(ctx, d.l.resumed(m)).Result()
	if errors.Is(err, redis.Nil) {
		return resumed{}, nil
	} else if err != nil {
		return resumed{}, unavailable(err)
	}
	a, b, _ := strings.Cut(v, "|")
	at, err1 := strconv.ParseInt(a, 10, 64)
	since, err2 := strconv.ParseInt(b, 10, 64)
	if err1 != nil || err2 != nil {
		return resumed{}, nil
	}
	r := resumed{at: time.UnixMicro(at)}
	if since > 0 { // 0: an export of before TakenAt
		r.since = time.UnixMicro(since)
	}
	return r, nil
}

// recency is which issues (or creations) a read reports as such: those at
// or after from (recentFrom). After an import, a row changed at or after
// since (when the export was taken) reports only those at or after floor
// too (the export's resume point): such a row had not changed since its
// issue when detection passed the issue, before the export, and the issue
// was reported then.
type recency struct{ from, floor, since time.Time }

// of is the earliest issue time reported for a row changed at changed.
func (r recency) of(changed time.Time) time.Time {
	if !r.since.IsZero() && !changed.Before(r.since) && r.floor.After(r.from) {
		return r.floor
	}
	return r.from
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
