package events

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"time"
)

// dispatcher makes the deliveries: it claims those due from the queue,
// makes them Concurrency at a time (deliver.go) and records their outcomes.
type dispatcher struct {
	*base
	endpoints   *Webhooks // where deliveries go and what signs them
	queue       *queue
	dest        destinations
	timeout     time.Duration
	concurrency int
	tick        time.Duration
	queued      <-chan struct{} // signalled when this instance's detection queued events
}

// run claims due deliveries and makes them, Concurrency at a time,
// until ctx ends; it then waits for those under way. Claims wait for a few
// free slots, and outcomes are recorded in batches (recorder), so that a
// busy instance makes few Redis round trips per delivery.
func (dp *dispatcher) run(ctx context.Context) {
	client := dp.newClient()
	defer client.CloseIdleConnections()
	slots := make(chan struct{}, dp.concurrency)
	wake := make(chan struct{}, 1)
	outcomes := make(chan outcome, dp.concurrency)
	recorded := make(chan struct{})
	go func() { defer close(recorded); dp.recorder(outcomes, wake) }()
	var wg sync.WaitGroup
	defer func() { wg.Wait(); close(outcomes); <-recorded }()
	cache := newEndpointCache(dp.endpoints)
	batch := max(1, dp.concurrency/8) // claim once this many slots are free
	failures := throttle{every: time.Minute}
	for ctx.Err() == nil {
		free := cap(slots) - len(slots)
		var claims []claim
		var err error
		if free >= min(batch, cap(slots)) {
			claims, err = dp.queue.claim(ctx, min(free, 64))
		}
		if err != nil && ctx.Err() == nil && failures.due(dp.now()) {
			dp.logger.Error("events: claiming deliveries failed; retrying", "err", err)
		}
		if len(claims) == 0 {
			dp.wait(ctx, wake)
			continue
		}
		msgs, ver, err := dp.messages(ctx, claims)
		if err != nil {
			continue // the leases expire, and the deliveries come back
		}
		eps := cache.get(ctx, claims, ver)
		for i, c := range claims {
			slots <- struct{}{}
			wg.Go(func() {
				defer func() { <-slots }()
				if o, ok := dp.attempt(client, c, eps[c.endpoint], msgs[i]); ok {
					outcomes <- o
				}
			})
		}
	}
}

// recorder records outcomes as they come, those that came together in one
// pipeline, and wakes the dispatcher after each batch.
func (dp *dispatcher) recorder(outcomes <-chan outcome, wake chan<- struct{}) {
	for o := range outcomes {
		batch := []outcome{o}
	more:
		for len(batch) < 64 {
			select {
			case o, ok := <-outcomes:
				if !ok {
					break more
				}
				batch = append(batch, o)
			default:
				break more
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := dp.queue.complete(ctx, batch); err != nil {
			dp.logger.Warn("events: outcomes of deliveries were not recorded; they will be made again", "deliveries", len(batch), "err", err)
		}
		cancel()
		select {
		case wake <- struct{}{}:
		default:
		}
	}
}

// wait waits for outcomes to be recorded, events queued by this instance,
// the next tick (for those another instance queued, and retries coming
// due), or ctx's end.
func (dp *dispatcher) wait(ctx context.Context, wake <-chan struct{}) {
	t := time.NewTimer(min(dp.tick, 250*time.Millisecond))
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-wake:
	case <-dp.queued:
	case <-t.C:
	}
}

// attempt makes one delivery. It runs on its own context: a shutdown lets
// deliveries under way finish, within the timeout. ok is false when there
// is nothing to record (the endpoint was deleted meanwhile, or could not
// be read: the lease expires and the delivery is made again).
func (dp *dispatcher) attempt(client *http.Client, c claim, e *Webhook, msg *Event) (outcome, bool) {
	if e == nil {
		return outcome{}, false
	}
	dp.m.inFlight.Inc()
	defer dp.m.inFlight.Dec()
	ctx, cancel := context.WithTimeout(context.Background(), dp.timeout+5*time.Second)
	defer cancel()
	o := outcome{c: c}
	if msg != nil {
		ctx, span := dp.traceDeliver(ctx, c, e, msg)
		o.attempt, o.ok = dp.deliver(ctx, client, e, msg)
		dp.observeAttempt(span, c, msg, o.attempt, o.ok)
	} else {
		dp.m.expiredDelivery(e.Mode)
	}
	return o, true
}

// messages reads the claimed events, with the span context of their
// detection (nil for one past its retention), and, in the same round trip,
// the endpoints' version, which every change of an endpoint moves.
func (dp *dispatcher) messages(ctx context.Context, claims []claim) ([]*Event, string, error) {
	keys := make([]string, len(claims), len(claims)+1)
	for i, c := range claims {
		keys[i] = dp.l.message(c.event)
	}
	vals, err := dp.rdb.MGet(ctx, append(keys, dp.l.version())...).Result()
	if err != nil {
		return nil, "", unavailable(err)
	}
	ver, _ := vals[len(claims)].(string)
	vals = vals[:len(claims)]
	out := make([]*Event, len(claims))
	for i, v := range vals {
		if str, ok := v.(string); ok {
			var ev Event
			if st := (storedEvent{Event: &ev}); json.Unmarshal([]byte(str), &st) == nil {
				ev.cause = parseCause(st.Cause)
				if st.Commit > 0 {
					ev.commit = time.UnixMicro(st.Commit)
				}
				out[i] = &ev
			}
		}
	}
	return out, ver, nil
}
