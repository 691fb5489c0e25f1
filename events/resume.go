package events

import (
	"context"
	"encoding/json"
	"errors"
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
// queue matches it).

// resumePoints are the modes' resume points, from the endpoints by mode
// (their ids): none for a mode whose change streams have no watermark.
func (es *Webhooks) resumePoints(ctx context.Context, ids map[invoicing.Mode][]string) (map[invoicing.Mode]time.Time, error) {
	out := map[invoicing.Mode]time.Time{}
	for m, eps := range ids {
		// The watermarks first: an event queued after they were read is of
		// a row at or after them.
		at, ok, err := es.watermarksLow(ctx, m)
		if err != nil || !ok {
			return out, err
		}
		pending, err := es.pendingLow(ctx, eps)
		if err != nil {
			return out, err
		}
		if !pending.IsZero() && pending.Before(at) {
			at = pending
		}
		// No further back than a rewind reads: an endpoint disabled for
		// days would otherwise have every event of those days sent again
		// to every endpoint restored.
		out[m] = later(at, es.now().Add(-es.recovery)).UTC()
	}
	return out, nil
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

// pendingLow is the earliest time of the events the endpoints have still
// to receive (queued or leased); zero when none.
func (es *Webhooks) pendingLow(ctx context.Context, eps []string) (time.Time, error) {
	var low time.Time
	for _, ep := range eps {
		pipe := es.rdb.Pipeline()
		q, l := pipe.ZRange(ctx, es.l.queue(ep), 0, -1), pipe.ZRange(ctx, es.l.lease(ep), 0, -1)
		if _, err := pipe.Exec(ctx); err != nil {
			return time.Time{}, unavailable(err)
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
				return time.Time{}, unavailable(err)
			}
			for _, v := range vals {
				var ev Event
				if s, ok := v.(string); ok && json.Unmarshal([]byte(s), &storedEvent{Event: &ev}) == nil && (low.IsZero() || ev.Time.Before(low)) {
					low = ev.Time
				}
			}
		}
	}
	return low, nil
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

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
