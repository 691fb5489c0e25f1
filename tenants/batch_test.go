package tenants

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
	"github.com/redis/go-redis/v9"
)

// waitFor queues n requests of the company for the limiter's next round, as
// n concurrent Allow calls would, without sending anything yet.
func waitFor(l *Limiter, company string, m invoicing.Mode, n int) []*waiter {
	st := l.state(company, m, l.now())
	st.mu.Lock()
	defer st.mu.Unlock()
	ws := make([]*waiter, n)
	for i := range ws {
		w, schedule := st.lease.join()
		if schedule {
			l.batch.queue = append(l.batch.queue, st)
		}
		ws[i] = w
	}
	return ws
}

// drain sends rounds until none is queued, as the batcher's goroutine does.
func drain(t *testing.T, l *Limiter) {
	t.Helper()
	l.batch.busy = true
	for l.sendRound() {
	}
	if l.batch.busy || len(l.batch.queue) != 0 {
		t.Fatalf("batcher not idle after the rounds: busy %v, %d queued", l.batch.busy, len(l.batch.queue))
	}
}

// One round of many requests of two companies, on a Redis that has forgotten
// the script (restarted or flushed), then on one that knows it; in one script
// call (one server) and in a pipeline of one call per company (as on Redis
// Cluster): every request is answered, by Redis, and exactly the burst is
// admitted, as one call per request would.
func TestRoundDecidesEachRequest(t *testing.T) {
	t.Parallel()
	srv := testenv.StartRedisServer(t, 0)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = rdb.Close() })
	ctx := context.Background()
	lim := Limit{Rate: MinRate, Burst: 7}
	for _, perCompany := range []bool{false, true} {
		for _, flush := range []bool{true, false} {
			l := newLimiter(Config{Redis: rdb, Logger: discard()})
			l.oneCompanyPerCall = perCompany
			if err := l.SetLimit(ctx, "acme", invoicing.Live, lim); err != nil {
				t.Fatal(err)
			}
			if flush {
				if err := rdb.ScriptFlush(ctx).Err(); err != nil {
					t.Fatal(err)
				}
			}
			if err := rdb.Del(ctx, tatKey(l.prefix, "acme", invoicing.Live), tatKey(l.prefix, "other", invoicing.Live)).Err(); err != nil {
				t.Fatal(err)
			}
			acme := waitFor(l, "acme", invoicing.Live, 20)
			// Another company in the same round keeps its own budget.
			other := waitFor(l, "other", invoicing.Live, 1)
			drain(t, l)
			allowed := 0
			for i, w := range append(acme, other...) {
				select {
				case <-w.done:
				default:
					t.Fatalf("per company %v, flush %v: request %d not answered", perCompany, flush, i)
				}
				if w.err != nil || w.d.Local || w.d.Leased {
					t.Fatalf("per company %v, flush %v: request %d: %+v, %v; want decided by Redis", perCompany, flush, i, w.d, w.err)
				}
				if w.d.Allowed && i < len(acme) {
					allowed++
				}
			}
			if allowed != lim.Burst {
				t.Errorf("per company %v, flush %v: %d admitted in one round, want the burst %d", perCompany, flush, allowed, lim.Burst)
			}
			if d := other[0].d; !d.Allowed || d.Limit != (Limit{Rate: 50, Burst: 100}) {
				t.Errorf("per company %v, flush %v: the other company's decision %+v, want admitted at the default", perCompany, flush, d)
			}
			if s := l.Stats(); s.RedisCalls != map[bool]uint64{false: 1, true: 2}[perCompany] || s.Refreshes != 2 ||
				s.AdmittedRedis != 8 || s.RejectedRedis != 13 {
				t.Errorf("per company %v, flush %v: stats %+v", perCompany, flush, s)
			}
		}
	}
}

// Many concurrent Allow calls on one instance (they share refreshes) admit
// exactly the burst of an unleased limit, all decided by Redis.
func TestConcurrentDecisionsShareRounds(t *testing.T) {
	t.Parallel()
	rdb, prefix := testenv.Redis(t)
	ctx := context.Background()
	l := newLimiter(Config{Redis: rdb, Prefix: prefix, Logger: discard()})
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
			if err != nil || d.Local || d.Leased {
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
	// A refresh counts its outcome just after it hands the decisions over
	// (the counts are for dashboards): the last one's may still be on its
	// way when the callers have returned, so wait for all 200.
	var s Stats
	testenv.Eventually(t, "the counts of all 200 decisions", func() error {
		s = l.Stats()
		return testenv.Want(s.AdmittedRedis+s.RejectedRedis, 200, "counted")
	})
	if s.AdmittedRedis != 25 || s.RejectedRedis != 175 || s.Refreshes > 200 || s.TokensLeased != 0 {
		t.Errorf("stats %+v: want 25 admitted and 175 refused by Redis, nothing leased", s)
	}
	// The sending goroutine marks the batcher idle just after it delivers
	// the last decision: wait for it.
	testenv.Eventually(t, "the batcher to be idle after the calls", func() error {
		l.batch.mu.Lock()
		defer l.batch.mu.Unlock()
		if l.batch.busy || len(l.batch.queue) != 0 {
			return fmt.Errorf("busy %v, %d queued", l.batch.busy, len(l.batch.queue))
		}
		return nil
	})
}
