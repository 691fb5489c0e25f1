package tenants

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
	"github.com/redis/go-redis/v9"
)

var (
	liveDef = Limit{Rate: 50, Burst: 100}
	testDef = Limit{Rate: 10, Burst: 20}
)

func TestLimitsSetGetReset(t *testing.T) {
	t.Parallel()
	testenv.RedisBackends(t, func(t *testing.T, rdb *redis.Client, prefix string) {
		ctx := context.Background()
		l := newLimiter(Config{Redis: rdb, Prefix: prefix, Logger: discard()})
		check := func(step string, want Limits) {
			t.Helper()
			got, err := l.Limits(ctx, "acme")
			if err != nil || got != want {
				t.Errorf("%s: Limits = %+v, %v; want %+v", step, got, err, want)
			}
		}
		check("fresh", Limits{Live: liveDef, Test: testDef})

		if err := l.SetLimit(ctx, "acme", invoicing.Test, Limit{Rate: 2.5, Burst: 3}); err != nil {
			t.Fatal(err)
		}
		check("TEST set", Limits{Live: liveDef, Test: Limit{2.5, 3}, TestCustom: true})

		if err := l.SetLimit(ctx, "acme", "", Limit{Rate: 400, Burst: 800}); err != nil {
			t.Fatal(err)
		}
		check("both set", Limits{Live: Limit{400, 800}, Test: Limit{400, 800}, LiveCustom: true, TestCustom: true})

		if err := l.SetLimit(ctx, "acme", invoicing.Live, Limit{Rate: 0, Burst: 1}); !errors.Is(err, ErrInvalidLimit) {
			t.Errorf("rate 0: %v, want ErrInvalidLimit", err)
		}
		if err := l.SetLimit(ctx, "acme", "live", Limit{Rate: 1, Burst: 1}); !errors.Is(err, invoicing.ErrInvalidMode) {
			t.Errorf("mode live: %v, want invoicing.ErrInvalidMode", err)
		}
		if err := l.SetLimit(ctx, "", invoicing.Live, Limit{Rate: 1, Burst: 1}); !errors.Is(err, ErrInvalidCompany) {
			t.Errorf("no company: %v, want ErrInvalidCompany", err)
		}
		check("after refused changes", Limits{Live: Limit{400, 800}, Test: Limit{400, 800}, LiveCustom: true, TestCustom: true})

		// Another company is untouched.
		if got, err := l.Limits(ctx, "other"); err != nil || got != (Limits{Live: liveDef, Test: testDef}) {
			t.Errorf("other company: %+v, %v", got, err)
		}
		// Many at once, in order.
		many, err := l.LimitsOf(ctx, []string{"other", "acme", "other"})
		if err != nil || len(many) != 3 || many[0] != (Limits{Live: liveDef, Test: testDef}) || many[1] != (Limits{Live: Limit{400, 800}, Test: Limit{400, 800}, LiveCustom: true, TestCustom: true}) || many[2] != many[0] {
			t.Errorf("LimitsOf: %+v, %v", many, err)
		}
		if _, err := l.LimitsOf(ctx, []string{"acme", ""}); !errors.Is(err, ErrInvalidCompany) {
			t.Errorf("LimitsOf with no company: %v, want ErrInvalidCompany", err)
		}

		if err := l.ResetLimits(ctx, "acme"); err != nil {
			t.Fatal(err)
		}
		check("reset", Limits{Live: liveDef, Test: testDef})
	})
}

// A limit set through one instance is what the next refresh of every other
// instance applies: the script reads it, no cache stands in between. A limit
// too low to lease is applied from the next decision on, whatever was leased
// under the one before (a leased limit within the lease TTL:
// TestSimulatedLimitChange).
func TestOverrideReachesEveryInstance(t *testing.T) {
	t.Parallel()
	testenv.RedisBackends(t, func(t *testing.T, rdb *redis.Client, prefix string) {
		ctx := context.Background()
		a := newLimiter(Config{Redis: rdb, Prefix: prefix, Logger: discard()})
		b := newLimiter(Config{Redis: rdb, Prefix: prefix, Logger: discard()})
		if d, err := b.Allow(ctx, "acme", invoicing.Live); err != nil || d.Limit != liveDef {
			t.Fatalf("before: %+v, %v; want the default", d, err)
		}
		if err := a.SetLimit(ctx, "acme", invoicing.Live, Limit{Rate: 7, Burst: 3}); err != nil {
			t.Fatal(err)
		}
		if d, err := b.Allow(ctx, "acme", invoicing.Live); err != nil || d.Limit != (Limit{7, 3}) {
			t.Fatalf("after set: %+v, %v; want {7 3}", d, err)
		}
		if err := a.ResetLimits(ctx, "acme"); err != nil {
			t.Fatal(err)
		}
		if d, err := b.Allow(ctx, "acme", invoicing.Live); err != nil || d.Limit != liveDef {
			t.Fatalf("after reset: %+v, %v; want the default", d, err)
		}
		// A hand-edited override the code would refuse is ignored too.
		if err := rdb.HSet(ctx, overrideKey(prefix, "acme"), "live_rate", "1e12", "live_burst", "5").Err(); err != nil {
			t.Fatal(err)
		}
		if d, err := b.Allow(ctx, "acme", invoicing.Live); err != nil || d.Limit != liveDef {
			t.Fatalf("absurd override: %+v, %v; want the default", d, err)
		}
	})
}

// Exhausting TEST leaves LIVE untouched, and the two have their own defaults.
func TestLiveAndTestApart(t *testing.T) {
	t.Parallel()
	testenv.RedisBackends(t, func(t *testing.T, rdb *redis.Client, prefix string) {
		ctx := context.Background()
		// Slow rates: nothing refills while the test runs, on either clock.
		l := newLimiter(Config{Redis: rdb, Prefix: prefix, Logger: discard(),
			LiveDefault: Limit{Rate: 0.01, Burst: 6}, TestDefault: Limit{Rate: 0.01, Burst: 2}})
		count := func(m invoicing.Mode, n int) (admitted int, last Decision) {
			for range n {
				d, err := l.Allow(ctx, "acme", m)
				if err != nil {
					t.Fatal(err)
				}
				if d.Local {
					t.Fatalf("decided locally: %+v", d)
				}
				if d.Allowed {
					admitted++
				}
				last = d
			}
			return admitted, last
		}
		if n, last := count(invoicing.Test, 10); n != 2 || last.Allowed || last.Limit != (Limit{0.01, 2}) {
			t.Errorf("TEST: admitted %d of 10 (last %+v), want 2 at {0.01 2}", n, last)
		}
		if last := firstDecision(t, l, "acme", invoicing.Test); last.RetryAfter < 99*time.Second || last.RetryAfter > 100*time.Second {
			t.Errorf("TEST retry after %v, want ~100s (1/rate)", last.RetryAfter)
		}
		if n, last := count(invoicing.Live, 10); n != 6 || last.Limit != (Limit{0.01, 6}) {
			t.Errorf("LIVE after TEST exhausted: admitted %d of 10 (last %+v), want 6 at {0.01 6}", n, last)
		}
		// Idle companies leave nothing behind: the TAT expires once the bucket
		// would be full again, burst/rate after it was emptied.
		for _, m := range invoicing.Modes {
			ttl, err := rdb.PTTL(ctx, tatKey(prefix, "acme", m)).Result()
			max := map[invoicing.Mode]time.Duration{invoicing.Live: 600 * time.Second, invoicing.Test: 200 * time.Second}[m]
			if err != nil || ttl <= max-5*time.Second || ttl > max {
				t.Errorf("%v TAT key TTL = %v, %v; want about %v", m, ttl, err, max)
			}
		}
		if _, err := l.Allow(ctx, "acme", "PROD"); !errors.Is(err, invoicing.ErrInvalidMode) {
			t.Errorf("mode PROD: %v, want invoicing.ErrInvalidMode", err)
		}
		if _, err := l.Allow(ctx, "", invoicing.Live); !errors.Is(err, ErrInvalidCompany) {
			t.Errorf("no company: %v, want ErrInvalidCompany", err)
		}
	})
}

func firstDecision(t *testing.T, l *Limiter, company string, m invoicing.Mode) Decision {
	t.Helper()
	d, err := l.Allow(context.Background(), company, m)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// After a run of rejections, waiting what the decision said (1/rate at most)
// is enough: rejected requests took nothing.
func TestRejectedRequestsDoNotConsumeBudget(t *testing.T) {
	t.Parallel()
	testenv.RedisBackends(t, func(t *testing.T, rdb *redis.Client, prefix string) {
		ctx := context.Background()
		lim := Limit{Rate: 20, Burst: 2} // 50ms apart
		l := newLimiter(Config{Redis: rdb, Prefix: prefix, Logger: discard(), LiveDefault: lim})
		for round := range 3 {
			var last Decision
			rejected := 0
			// 200 calls, then on until the latest decision is a rejection: on
			// a slow machine the bucket refills during the run, and waiting
			// an earlier rejection's advice would not cover a later admission.
			for i := 0; i < 200 || last.Allowed; i++ {
				if i == 10_000 {
					t.Fatalf("round %d: no rejection to end the run", round)
				}
				d, err := l.Allow(ctx, "acme", invoicing.Live)
				if err != nil {
					t.Fatal(err)
				}
				if !d.Allowed {
					rejected++
				}
				last = d
			}
			if rejected == 0 {
				t.Fatalf("round %d: nothing rejected", round)
			}
			if last.RetryAfter <= 0 || last.RetryAfter > lim.interval() {
				t.Fatalf("round %d: retry after %v, want within (0, %v]", round, last.RetryAfter, lim.interval())
			}
			// The script reads Redis's own clock (TIME), which only waiting
			// moves; waiting longer than advised would prove less, never
			// fail.
			time.Sleep(last.RetryAfter)
			if d := firstDecision(t, l, "acme", invoicing.Live); !d.Allowed {
				t.Fatalf("round %d: after %d rejections and the advised %v: %+v", round, rejected, last.RetryAfter, d)
			}
		}
	})
}
