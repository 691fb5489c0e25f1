package events

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/invoicing-ao/gateway/invoicing"
)

// detector finds the changes of the platform's databases and queues their
// events: three loops a mode (the streams' changes, the overdue invoices,
// the sweep), run while this instance leads the mode's detection. What a
// loop reads and queues is in detect.go.
type detector struct {
	*base
	endpoints *Webhooks // what events are routed to (targets.go)
	queue     *queue
	sources   map[invoicing.Mode]Source
	tick      time.Duration
	margin    time.Duration
	settle    time.Duration
	sweep     time.Duration
	recovery  time.Duration
	instance  string        // this instance, as the lead names it
	queued    chan struct{} // signalled when events are queued: the dispatcher's

}

// run runs the loops of every mode that has a source until ctx ends.
func (d *detector) run(ctx context.Context) {
	var wg sync.WaitGroup
	for m, src := range d.sources {
		if src == nil {
			continue
		}
		wg.Go(func() { d.every(ctx, d.tick, m, "changes", d.changesLoop(m, src)) })
		// The calendar turns once a day: a second is soon enough.
		wg.Go(func() { d.every(ctx, max(d.tick, time.Second), m, "overdue", d.overdueLoop(m, src)) })
		wg.Go(func() { d.every(ctx, d.sweep/2, m, "sweep", d.sweepLoop(m, src)) })
	}
	wg.Wait()
}

// every runs step every period while this instance leads the mode's detection,
// logging failures (at most once a minute each) and going on.
func (d *detector) every(ctx context.Context, period time.Duration, m invoicing.Mode, what string, step func(ctx context.Context) error) {
	t := time.NewTicker(period)
	defer t.Stop()
	failures := throttle{every: time.Minute}
	for {
		select {
		case <-ctx.Done():
			d.m.leads(m, false)
			return
		case <-t.C:
		}
		lead, err := d.lead(ctx, m)
		d.m.leads(m, err == nil && lead)
		if err == nil && lead {
			err = step(ctx)
		}
		if err != nil && ctx.Err() == nil {
			d.m.detectionFailed(m, what)
		}
		if err != nil && ctx.Err() == nil && failures.due(d.now()) {
			d.logger.Error("events: detection failed; retrying", "mode", m, "loop", what, "err", err)
		}
	}
}

// leadScript takes or keeps the lead of a mode's detection (KEYS[1]) for
// ARGV[2] ms when nobody else has it.
var leadScript = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if v == false then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
elseif v == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0`)

// lead reports whether this instance leads the mode's detection. The lead
// is only an economy (one instance reads the database): two leaders at
// once (a pause longer than the lease) queue nothing twice, since each
// page's watermark moves by compare-and-set with the page.
func (d *detector) lead(ctx context.Context, m invoicing.Mode) (bool, error) {
	ttl := 3*max(d.tick, time.Second) + 5*time.Second
	n, err := leadScript.Run(ctx, d.rdb, []string{d.l.leader(m)}, d.instance, ttl.Milliseconds()).Int()
	return n == 1, unavailable(err)
}

// A loop's state between ticks: the endpoints it routes to.
type loopState struct{ t *targets }

// changesLoop's step reads, in this order, the endpoints (prepare says
// why), the streams' watermarks, then what is in flight; each stream then
// reads the rows of the transactions that ended and what was committed
// since (horizon.go).
func (d *detector) changesLoop(m invoicing.Mode, src Source) func(context.Context) error {
	var ls loopState
	hz := newHorizon()
	return func(ctx context.Context) error {
		t, err := d.endpoints.loadTargets(ctx, m, ls.t)
		if err != nil {
			return err
		}
		ls.t = t
		raws, err := d.marks(ctx, m)
		if err != nil {
			return err
		}
		before := d.now()
		h, err := src.InFlight(ctx)
		if err != nil {
			return err
		}
		to := d.observe(m, hz, h, raws, before.Add(d.now().Sub(before)/2))
		var errs []error
		for _, st := range streams {
			errs = append(errs, d.follow(ctx, src, m, st, t, hz, to))
		}
		d.m.oldestOpen(m, hz.oldest(), h.Now)
		return errors.Join(append(errs, d.recordAhead(ctx, m, hz))...)
	}
}

// marks reads the change streams' watermarks ("" for none), in streams'
// order, in one round trip.
func (d *detector) marks(ctx context.Context, m invoicing.Mode) ([]string, error) {
	keys := make([]string, len(streams))
	for i, st := range streams {
		keys[i] = d.l.watermark(m, st.name)
	}
	vals, err := d.rdb.MGet(ctx, keys...).Result()
	if err != nil {
		return nil, unavailable(err)
	}
	out := make([]string, len(vals))
	for i, v := range vals {
		out[i], _ = v.(string)
	}
	return out, nil
}

// wakeDeliveries tells this instance's idle deliveries that events were
// queued, so that they claim them now rather than at their next tick.
func (d *detector) wakeDeliveries() {
	select {
	case d.queued <- struct{}{}:
	default:
	}
}

func (d *detector) overdueLoop(m invoicing.Mode, src Source) func(context.Context) error {
	var ls loopState
	return func(ctx context.Context) error {
		t, dbNow, err := d.prepare(ctx, m, src, &ls)
		if err != nil {
			return err
		}
		return d.overdue(ctx, src, m, t, dbNow)
	}
}

func (d *detector) sweepLoop(m invoicing.Mode, src Source) func(context.Context) error {
	var ls loopState
	return func(ctx context.Context) error {
		// A sweep that the endpoints changed under is made again at once,
		// with them read again: the next one reads back only half of its
		// window.
		for range 3 {
			t, dbNow, err := d.prepare(ctx, m, src, &ls)
			if err != nil {
				return err
			}
			stale, err := d.sweepOnce(ctx, src, m, t, dbNow, dbNow.Add(-d.settle))
			if !stale {
				return errors.Join(err, d.dropAbandoned(ctx, t), d.queue.trim(ctx, t), d.trimFeeds(ctx, m))
			}
		}
		return nil
	}
}

// dropAbandoned deletes the temporary endpoints whose time is over (a tool
// that registered one and stopped without removing it), with what waits
// for them.
func (d *detector) dropAbandoned(ctx context.Context, t *targets) error {
	now := d.now()
	var errs []error
	for _, eps := range t.byCompany {
		for _, e := range eps {
			if e.ExpiresAt != nil && !e.ExpiresAt.After(now) {
				if _, err := d.endpoints.remove(ctx, e, false); err != nil && !errors.Is(err, ErrNotFound) {
					errs = append(errs, err)
				}
			}
		}
	}
	return errors.Join(errs...)
}

// prepare reads the endpoints, then the database's clock: in that order, so
// that a change later than the clock reading, which this tick will not
// read, is routed by endpoints as they are after it. An endpoint changed
// between the two readings ends the step at its first page (enqueue checks
// the endpoints' version), which the next tick makes with them read again.
func (d *detector) prepare(ctx context.Context, m invoicing.Mode, src Source, ls *loopState) (*targets, time.Time, error) {
	t, err := d.endpoints.loadTargets(ctx, m, ls.t)
	if err != nil {
		return nil, time.Time{}, err
	}
	ls.t = t
	dbNow, err := src.DatabaseNow(ctx)
	return t, dbNow, err
}
