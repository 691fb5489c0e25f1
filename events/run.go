package events

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/invoicing-ao/gateway/invoicing"
)

// Run detects changes (one instance per mode leads) and delivers events
// until ctx ends; deliveries under way are then finished (within the
// delivery timeout) before it returns.
func (s *Service) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for m, src := range s.sources {
		if src == nil {
			continue
		}
		wg.Go(func() { s.every(ctx, s.tick, m, "changes", s.changesLoop(m, src)) })
		wg.Go(func() { s.every(ctx, s.tick, m, "overdue", s.overdueLoop(m, src)) })
		wg.Go(func() { s.every(ctx, s.sweep/2, m, "sweep", s.sweepLoop(m, src)) })
	}
	wg.Go(func() { s.dispatch(ctx) })
	wg.Wait()
}

// every runs step every d while this instance leads the mode's detection,
// logging failures (at most once a minute each) and going on.
func (s *Service) every(ctx context.Context, d time.Duration, m invoicing.Mode, what string, step func(ctx context.Context) error) {
	t := time.NewTicker(d)
	defer t.Stop()
	var lastLog time.Time
	for {
		select {
		case <-ctx.Done():
			s.m.leads(m, false)
			return
		case <-t.C:
		}
		lead, err := s.lead(ctx, m)
		s.m.leads(m, err == nil && lead)
		if err == nil && lead {
			err = step(ctx)
		}
		if err != nil && ctx.Err() == nil {
			s.m.detectionFailed(m, what)
		}
		if err != nil && ctx.Err() == nil && time.Since(lastLog) > time.Minute {
			lastLog = time.Now()
			s.logger.Error("events: detection failed; retrying", "mode", m, "loop", what, "err", err)
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
func (s *Service) lead(ctx context.Context, m invoicing.Mode) (bool, error) {
	ttl := 3*max(s.tick, time.Second) + 5*time.Second
	n, err := leadScript.Run(ctx, s.rdb, []string{s.l.leader(m)}, s.instance, ttl.Milliseconds()).Int()
	return n == 1, unavailable(err)
}

// A loop's state between ticks: the endpoints it routes to.
type loopState struct{ t *targets }

func (s *Service) changesLoop(m invoicing.Mode, src Source) func(context.Context) error {
	var ls loopState
	return func(ctx context.Context) error {
		t, dbNow, err := s.prepare(ctx, m, src, &ls)
		if err != nil {
			return err
		}
		to := dbNow.Add(-s.settle)
		var errs []error
		for _, st := range streams {
			errs = append(errs, s.advance(ctx, src, m, st, t, dbNow, to))
		}
		return errors.Join(errs...)
	}
}

func (s *Service) overdueLoop(m invoicing.Mode, src Source) func(context.Context) error {
	var ls loopState
	return func(ctx context.Context) error {
		t, dbNow, err := s.prepare(ctx, m, src, &ls)
		if err != nil {
			return err
		}
		return s.overdue(ctx, src, m, t, dbNow)
	}
}

func (s *Service) sweepLoop(m invoicing.Mode, src Source) func(context.Context) error {
	var ls loopState
	return func(ctx context.Context) error {
		// A sweep that the endpoints changed under is made again at once,
		// with them read again: the next one reads back only half of its
		// window.
		for range 3 {
			t, dbNow, err := s.prepare(ctx, m, src, &ls)
			if err != nil {
				return err
			}
			stale, err := s.sweepOnce(ctx, src, m, t, dbNow, dbNow.Add(-s.settle))
			if !stale {
				return errors.Join(err, s.dropAbandoned(ctx, t), s.trim(ctx, t), s.trimFeeds(ctx, m))
			}
		}
		return nil
	}
}

// dropAbandoned deletes the temporary endpoints whose time is over (a tool
// that registered one and stopped without removing it), with what waits
// for them.
func (s *Service) dropAbandoned(ctx context.Context, t *targets) error {
	now := s.now()
	var errs []error
	for _, eps := range t.byCompany {
		for _, e := range eps {
			if e.ExpiresAt != nil && !e.ExpiresAt.After(now) {
				if _, err := s.remove(ctx, e, false); err != nil && !errors.Is(err, ErrNotFound) {
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
func (s *Service) prepare(ctx context.Context, m invoicing.Mode, src Source, ls *loopState) (*targets, time.Time, error) {
	t, err := s.loadTargets(ctx, m, ls.t)
	if err != nil {
		return nil, time.Time{}, err
	}
	ls.t = t
	dbNow, err := src.DatabaseNow(ctx)
	return t, dbNow, err
}

// dispatch claims due deliveries and makes them, Concurrency at a time,
// until ctx ends; it then waits for those under way. Claims wait for a few
// free slots, and outcomes are recorded in batches (recorder), so that a
// busy instance makes few Redis round trips per delivery.
func (s *Service) dispatch(ctx context.Context) {
	client := s.newClient()
	defer client.CloseIdleConnections()
	slots := make(chan struct{}, s.concurrency)
	wake := make(chan struct{}, 1)
	outcomes := make(chan outcome, s.concurrency)
	recorded := make(chan struct{})
	go func() { defer close(recorded); s.recorder(outcomes, wake) }()
	var wg sync.WaitGroup
	defer func() { wg.Wait(); close(outcomes); <-recorded }()
	cache := newEndpointCache(s)
	batch := max(1, s.concurrency/8) // claim once this many slots are free
	var lastLog time.Time
	for ctx.Err() == nil {
		free := cap(slots) - len(slots)
		var claims []claim
		var err error
		if free >= min(batch, cap(slots)) {
			claims, err = s.claim(ctx, min(free, 64))
		}
		if err != nil && ctx.Err() == nil && time.Since(lastLog) > time.Minute {
			lastLog = time.Now()
			s.logger.Error("events: claiming deliveries failed; retrying", "err", err)
		}
		if len(claims) == 0 {
			s.wait(ctx, wake)
			continue
		}
		msgs, ver, err := s.messages(ctx, claims)
		if err != nil {
			continue // the leases expire, and the deliveries come back
		}
		eps := cache.get(ctx, claims, ver)
		for i, c := range claims {
			slots <- struct{}{}
			wg.Go(func() {
				defer func() { <-slots }()
				if o, ok := s.attempt(client, c, eps[c.endpoint], msgs[i]); ok {
					outcomes <- o
				}
			})
		}
	}
}

// recorder records outcomes as they come, those that came together in one
// pipeline, and wakes the dispatcher after each batch.
func (s *Service) recorder(outcomes <-chan outcome, wake chan<- struct{}) {
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
		if err := s.complete(ctx, batch); err != nil {
			s.logger.Warn("events: outcomes of deliveries were not recorded; they will be made again", "deliveries", len(batch), "err", err)
		}
		cancel()
		select {
		case wake <- struct{}{}:
		default:
		}
	}
}

// wait waits for outcomes to be recorded, the next tick, or ctx's end.
func (s *Service) wait(ctx context.Context, wake <-chan struct{}) {
	t := time.NewTimer(min(s.tick, 250*time.Millisecond))
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-wake:
	case <-t.C:
	}
}

// attempt makes one delivery. It runs on its own context: a shutdown lets
// deliveries under way finish, within the timeout. ok is false when there
// is nothing to record (the endpoint was deleted meanwhile, or could not
// be read: the lease expires and the delivery is made again).
func (s *Service) attempt(client *http.Client, c claim, e *Endpoint, msg *Event) (outcome, bool) {
	if e == nil {
		return outcome{}, false
	}
	s.m.inFlight.Inc()
	defer s.m.inFlight.Dec()
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout+5*time.Second)
	defer cancel()
	o := outcome{c: c}
	if msg != nil {
		ctx, span := s.traceDeliver(ctx, c, e, msg)
		o.attempt, o.ok = s.deliver(ctx, client, e, msg)
		s.observeAttempt(span, c, msg, o.attempt, o.ok)
	} else {
		s.m.expiredDelivery(e.Mode)
	}
	return o, true
}

// messages reads the claimed events, with the span context of their
// detection (nil for one past its retention), and, in the same round trip,
// the endpoints' version, which every change of an endpoint moves.
func (s *Service) messages(ctx context.Context, claims []claim) ([]*Event, string, error) {
	keys := make([]string, len(claims), len(claims)+1)
	for i, c := range claims {
		keys[i] = s.l.message(c.event)
	}
	vals, err := s.rdb.MGet(ctx, append(keys, s.l.version())...).Result()
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
				out[i] = &ev
			}
		}
	}
	return out, ver, nil
}

// endpointCache keeps endpoints read for deliveries while the endpoints'
// version stays where it was when they were read, and at most a second:
// a secret rotated, a URL changed or an endpoint disabled through the
// admin API applies to the next batch of deliveries, on every instance,
// without a read of each endpoint per batch. (The second bounds what
// changes without moving the version, such as the disabling of an endpoint
// failing for days.)
type endpointCache struct {
	s    *Service
	mu   sync.Mutex
	byID map[string]cachedEndpoint
}

type cachedEndpoint struct {
	e   *Endpoint
	at  time.Time
	ver string
}

func newEndpointCache(s *Service) *endpointCache {
	return &endpointCache{s: s, byID: map[string]cachedEndpoint{}}
}

// get returns the claims' endpoints, reading the stale or missing ones in
// one round trip; ver is the endpoints' version read before.
func (c *endpointCache) get(ctx context.Context, claims []claim, ver string) map[string]*Endpoint {
	now := time.Now()
	out := map[string]*Endpoint{}
	var missing []string
	c.mu.Lock()
	for _, cl := range claims {
		if _, seen := out[cl.endpoint]; seen {
			continue
		}
		if ce, ok := c.byID[cl.endpoint]; ok && ce.ver == ver && now.Sub(ce.at) < time.Second {
			out[cl.endpoint] = ce.e
			continue
		}
		out[cl.endpoint] = nil
		missing = append(missing, cl.endpoint)
	}
	c.mu.Unlock()
	if len(missing) == 0 {
		return out
	}
	eps, err := c.s.endpointsByID(ctx, missing)
	if err != nil {
		return out
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.byID) > 10_000 {
		clear(c.byID)
	}
	for i := range eps {
		e := &eps[i]
		out[e.ID] = e
		c.byID[e.ID] = cachedEndpoint{e: e, at: now, ver: ver}
	}
	return out
}
