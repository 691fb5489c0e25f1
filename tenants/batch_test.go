package tenants

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
	"github.com/redis/go-redis/v9"
)

// One pipelined round of many decisions, on a Redis that has forgotten the
// script (restarted or flushed): every decision is answered, by Redis, and
// exactly the burst is admitted, as one call at a time would.
func TestPipelinedRoundDecidesEachCall(t *testing.T) {
	srv := testenv.StartRedisServer(t, 0)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = rdb.Close() })
	ctx := context.Background()
	l := New(Config{Redis: rdb, Logger: discard()})
	lim := Limit{Rate: MinRate, Burst: 7}
	if err := l.SetLimit(ctx, "acme", invoicing.Live, lim); err != nil {
		t.Fatal(err)
	}
	for _, flush := range []bool{true, false} { // NOSCRIPT, then the script known
		if flush {
			if err := rdb.ScriptFlush(ctx).Err(); err != nil {
				t.Fatal(err)
			}
		}
		if err := rdb.Del(ctx, tatKey(l.prefix, "acme", invoicing.Live)).Err(); err != nil {
			t.Fatal(err)
		}
		calls := make([]*decideCall, 20)
		for i := range calls {
			calls[i] = &decideCall{companyID: "acme", m: invoicing.Live, done: make(chan struct{})}
		}
		// Another company in the same round keeps its own budget.
		other := &decideCall{companyID: "other", m: invoicing.Live, done: make(chan struct{})}
		l.batch.queue = append(append(l.batch.queue, calls...), other)
		l.batch.busy = true
		if more := l.sendRound(); more {
			t.Fatal("sendRound reports more queued after sending everything")
		}
		if l.batch.busy || len(l.batch.queue) != 0 {
			t.Fatalf("batcher not idle after the round: busy %v, %d queued", l.batch.busy, len(l.batch.queue))
		}
		allowed := 0
		for i, c := range append(calls, other) {
			select {
			case <-c.done:
			default:
				t.Fatalf("call %d not answered", i)
			}
			if c.err != nil {
				t.Fatalf("flush %v: call %d: %v", flush, i, c.err)
			}
			if c.d.Allowed && c.companyID == "acme" {
				allowed++
			}
		}
		if allowed != lim.Burst {
			t.Errorf("flush %v: %d admitted in one round, want the burst %d", flush, allowed, lim.Burst)
		}
		if !other.d.Allowed || other.d.Limit != (Limit{Rate: 50, Burst: 100}) {
			t.Errorf("flush %v: the other company's decision %+v, want admitted at the default", flush, other.d)
		}
	}
}

// Many concurrent Allow calls on one instance (they share rounds) admit
// exactly the burst, all decided by Redis.
func TestConcurrentDecisionsShareRounds(t *testing.T) {
	rdb, prefix := testenv.Redis(t)
	ctx := context.Background()
	l := New(Config{Redis: rdb, Prefix: prefix, Logger: discard()})
	lim := Limit{Rate: MinRate, Burst: 25}
	if err := l.SetLimit(ctx, "acme", invoicing.Live, lim); err != nil {
		t.Fatal(err)
	}
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		allowed int
	)
	for range 200 {
		wg.Go(func() {
			d, err := l.Allow(ctx, "acme", invoicing.Live)
			if err != nil || d.Local {
				t.Errorf("decision %+v, %v: want one by Redis", d, err)
				return
			}
			if d.Allowed {
				mu.Lock()
				allowed++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if allowed != lim.Burst {
		t.Errorf("%d admitted, want the burst %d", allowed, lim.Burst)
	}
	// The sending goroutine marks the batcher idle just after it delivers
	// the last decision, so give it a moment.
	idle := func() (bool, int) {
		l.batch.mu.Lock()
		defer l.batch.mu.Unlock()
		return !l.batch.busy && len(l.batch.queue) == 0, len(l.batch.queue)
	}
	deadline := time.Now().Add(2 * time.Second)
	for ok, _ := idle(); !ok && time.Now().Before(deadline); ok, _ = idle() {
		time.Sleep(time.Millisecond)
	}
	if ok, queued := idle(); !ok {
		t.Errorf("batcher not idle after the calls: %d queued", queued)
	}
}
