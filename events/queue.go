package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/invoicing-ao/gateway/invoicing"
)

// queue is the deliveries' queue in Redis, through its scripts: events
// queued for their endpoints (and remembered: markers.go), claimed,
// completed on the retry schedule, trimmed past the retention.
type queue struct {
	*base
	schedule     []time.Duration
	remember     time.Duration
	disableAfter time.Duration
	timeout      time.Duration // a delivery's, which its lease covers
	leaseMargin  time.Duration
}

// maxAttemptLog is how many attempts of a delivery are kept (the newest).
const maxAttemptLog = 20

// queued is an event ready to be queued: its message and its endpoints.
type queued struct {
	ev  Event
	eps []string
}

// move is a detector step's move of its watermark, from old to next; the
// zero move (the sweep's, a test delivery's) moves none.
type move struct{ key, old, next string }

// enqueue queues evs, routed by t (nil: not routed by a detector), and
// makes the move mv, or reports moved when another detector moved the
// watermark first or the endpoints changed since t was read: the step
// ends, and the next reads them again. Each event is stored with ctx's
// span context (see storedEvent).
func (qu *queue) enqueue(ctx context.Context, t *targets, mv move, evs []queued) (added int, moved bool, err error) {
	now := qu.now()
	gOld, gNow, keep := qu.generations(now)
	routedBy := ""
	if t != nil {
		routedBy = "v" + t.version
	}
	args := []any{qu.l.p, mv.key, mv.old, mv.next, now.UnixMilli(), qu.retention.Milliseconds(), qu.perEndpoint, gOld, gNow, keep.Milliseconds(),
		qu.FeedWindow().Milliseconds(), routedBy}
	cause := causeOf(ctx)
	for _, q := range evs {
		var msg []byte
		if len(q.eps) > 0 { // only a delivery reads the message
			st := storedEvent{Event: &q.ev, Cause: cause}
			if !q.ev.commit.IsZero() {
				st.Commit = q.ev.commit.UnixMicro()
			}
			if msg, err = json.Marshal(st); err != nil {
				return 0, false, err
			}
		}
		mode, company, body, err := qu.feedArgs(&q.ev)
		if err != nil {
			return 0, false, err
		}
		shard, member := marker(q.ev.ID)
		args = append(args, q.ev.ID, shard, member, msg, string(q.ev.Type), q.ev.ResourceID, mode, company, body, len(q.eps))
		for _, ep := range q.eps {
			args = append(args, ep)
		}
	}
	res, err := enqueueScript.Run(ctx, qu.rdb, []string{qu.l.ready()}, args...).Int64Slice()
	if err != nil {
		return 0, false, unavailable(err)
	}
	if len(res) != len(evs)+2 {
		return 0, len(res) == 1 && res[0] < 0, nil
	}
	for i := range evs {
		qu.m.queuedEvent(&evs[i].ev, res[i+1], now)
	}
	return int(res[0]), false, nil
}

// trim drops, from the queues and logs of t's endpoints, what was queued
// longer than the retention ago: queueing trims an endpoint's as it goes,
// this the endpoints that get nothing new (one disabled for good).
func (qu *queue) trim(ctx context.Context, t *targets) error {
	var ids []string
	for _, eps := range t.byCompany {
		for _, e := range eps {
			ids = append(ids, e.ID)
		}
	}
	for len(ids) > 0 {
		chunk := ids[:min(len(ids), 100)]
		ids = ids[len(chunk):]
		args := []any{qu.l.p, qu.now().UnixMilli(), qu.retention.Milliseconds(), qu.perEndpoint}
		for _, id := range chunk {
			args = append(args, id)
		}
		// A queue longer than a call trims (500) is trimmed by the calls
		// that follow, a few at a time.
		for range 20 {
			n, err := trimScript.Run(ctx, qu.rdb, []string{qu.l.ready()}, args...).Int()
			if err != nil {
				return unavailable(err)
			}
			if n < 500 {
				break
			}
		}
	}
	return nil
}

// claim is one leased delivery.
type claim struct {
	endpoint, event string
	attempts        int // made before this one
}

// leaseFor is how long a claimed delivery is an instance's: its timeout and
// a margin for the Redis round trips around it. An instance that dies loses
// its deliveries for this long (the margin is 20 s).
func (qu *queue) leaseFor() time.Duration { return qu.timeout + qu.leaseMargin }

// claim leases up to max due deliveries.
func (qu *queue) claim(ctx context.Context, max int) ([]claim, error) {
	res, err := claimScript.Run(ctx, qu.rdb, []string{qu.l.ready()}, qu.l.p, qu.now().UnixMilli(), max,
		qu.leaseFor().Milliseconds(), qu.perEndpoint).StringSlice()
	if err != nil {
		return nil, unavailable(err)
	}
	out := make([]claim, 0, len(res)/3)
	for i := 0; i+2 < len(res); i += 3 {
		n, _ := strconv.Atoi(res[i+2])
		out = append(out, claim{endpoint: res[i], event: res[i+1], attempts: n})
	}
	return out, nil
}

// Attempt is one try at a delivery, as the delivery log shows it.
type Attempt struct {
	At       time.Time `json:"at"`
	Status   int       `json:"status"` // the answer's status; 0 when none came
	Latency  float64   `json:"latencyMs"`
	Error    string    `json:"error,omitempty"`    // why it failed, when it did
	Response string    `json:"response,omitempty"` // the answer's first bytes

	reason int // why it failed (reasonNames), for the metrics
}

// willRetry reports whether a failure of the claimed attempt is retried:
// the schedule has a delay left for it.
func (qu *queue) willRetry(c claim) bool { return c.attempts < len(qu.schedule) }

// outcome is how a delivery ended.
type outcome struct {
	c       claim
	attempt *Attempt // nil for an event past its retention (never attempted)
	ok      bool
}

// complete records outcomes, in one pipeline: a failure is retried on the
// schedule, or marked failed when the schedule is spent. An outcome not
// recorded leaves its lease to expire: the delivery is made again.
func (qu *queue) complete(ctx context.Context, os []outcome) error {
	now := qu.now()
	pipe := qu.rdb.Pipeline()
	cmds := make([]*redis.Cmd, len(os))
	args := make([][]any, len(os))
	for i, o := range os {
		state, next, errText := "expired", int64(0), ""
		var att []byte
		if o.attempt != nil {
			att, _ = json.Marshal(o.attempt)
			switch {
			case o.ok:
				state = "ok"
			case qu.willRetry(o.c):
				state, next = "retry", now.Add(jitter(qu.schedule[o.c.attempts], o.c.event)).UnixMilli()
			default:
				state = "failed"
			}
			if !o.ok {
				errText = o.attempt.Error
			}
		}
		reason := fmt.Sprintf("disabled after %s of failed deliveries with no success; last error: %s", qu.disableAfter, invoicing.Clip(errText))
		args[i] = []any{qu.l.p, o.c.endpoint, o.c.event, now.UnixMilli(), state, att, next, errText,
			qu.disableAfter.Milliseconds(), qu.retention.Milliseconds(), qu.perEndpoint, maxAttemptLog, reason}
		cmds[i] = completeScript.EvalSha(ctx, pipe, []string{qu.l.ready()}, args[i]...)
	}
	_, err := pipe.Exec(ctx)
	if err == nil {
		return nil
	}
	// A Redis that lost its scripts (restarted, failed over) says NOSCRIPT:
	// each is sent again with its text.
	var errs []error
	for i, c := range cmds {
		if c.Err() == nil {
			continue
		}
		if !redis.HasErrorPrefix(c.Err(), "NOSCRIPT") {
			errs = append(errs, c.Err())
			continue
		}
		if err := completeScript.Run(ctx, qu.rdb, []string{qu.l.ready()}, args[i]...).Err(); err != nil {
			errs = append(errs, err)
		}
	}
	return unavailable(errors.Join(errs...))
}

// jitter spreads retries of events failed together (a receiver back from
// an outage is not hit by all of them in the same second) by up to 10 %
// of d, the same for an event's same retry whoever makes it.
func jitter(d time.Duration, event string) time.Duration {
	var h uint32 = 2166136261
	for i := 0; i < len(event); i++ {
		h = (h ^ uint32(event[i])) * 16777619
	}
	return d + time.Duration(float64(d)*0.1*float64(h%1000)/1000)
}
