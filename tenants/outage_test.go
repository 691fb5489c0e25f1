package tenants

import (
	"context"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
	"github.com/redis/go-redis/v9"
)

// Redis killed under load: no decision fails, every one is local at the
// company's last known limit (once the lease in hand is spent), and admission
// stays bounded by the local bucket. Redis restarted on the same port: the
// instance returns to it by itself. The limiter's clock is the test's, so
// the counts do not depend on the machine's speed.
func TestRedisKilledAndRestartedUnderLoad(t *testing.T) {
	t.Parallel()
	srv := testenv.StartRedisServer(t, 0)
	testenv.QuietRedisLog(t, srv.Addr())
	// One dial attempt per command: go-redis would otherwise retry a refused
	// dial for half a second of real time on every probe.
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true, DialerRetries: 1})
	t.Cleanup(func() { _ = rdb.Close() })
	retry := 200 * time.Millisecond
	logs := &logRecorder{}
	clk := newClock()
	// A refused connection fails at once; the long timeout only keeps a busy
	// machine's slow answer from counting as an outage.
	l := New(Config{Redis: rdb, RetryEvery: retry, RedisTimeout: 5 * time.Second, Now: clk.Now, Logger: slogOf(logs)})
	custom := Limit{Rate: 100, Burst: 10}
	if err := l.SetLimit(context.Background(), "acme", invoicing.Live, custom); err != nil {
		t.Fatal(err)
	}

	// Phase 1: Redis up.
	for _, d := range loadOf(t, l, clk, 300*time.Millisecond) {
		if d.Local || d.Limit != custom {
			t.Fatalf("with Redis up: %+v", d)
		}
	}

	// Phase 2: Redis killed.
	srv.Kill()
	outageDecisions(t, l, clk, custom)

	// Phase 3: Redis back on the same port (empty: the override is gone).
	testenv.StartRedisServer(t, srv.Port)
	outageRecovered(t, l, clk, retry, logs)
}

// loadOf sends l 4 requests of company acme per millisecond of the test's
// clock for span, and returns the decisions; none may fail.
func loadOf(t *testing.T, l *Limiter, clk *testenv.Clock, span time.Duration) (evs []Decision) {
	t.Helper()
	for end := clk.Now().Add(span); clk.Now().Before(end); clk.Add(time.Millisecond) {
		for range 4 {
			d, err := l.Allow(context.Background(), "acme", invoicing.Live)
			if err != nil {
				t.Fatalf("a decision failed: %v", err)
			}
			evs = append(evs, d)
		}
	}
	return evs
}

// outageDecisions loads l with Redis dead: every decision is local at the
// last known limit (custom) once the lease in hand is spent, and admission
// stays bounded by the local bucket.
func outageDecisions(t *testing.T, l *Limiter, clk *testenv.Clock, custom Limit) {
	t.Helper()
	down := 1500 * time.Millisecond
	evs := loadOf(t, l, clk, down)
	local, admitted, leased, leasedTokens := 0, 0, 0, 0
	for i, d := range evs {
		switch {
		case d.Local:
			local++
			if d.Limit != custom {
				t.Fatalf("local decision at %+v, want the last known %+v", d.Limit, custom)
			}
		case d.Leased:
			// What the lease in hand decides comes first: its tokens,
			// and refusals while the bucket was last found short.
			if i != leased {
				t.Fatalf("decision %d by the lease after %d local ones", i, local)
			}
			leased++
			if d.Allowed {
				leasedTokens++
			}
		default:
			t.Fatalf("decided by a dead Redis: %+v", d)
		}
		if d.Allowed {
			admitted++
		}
	}
	if !l.Fallback() {
		t.Error("Fallback() = false with Redis down")
	}
	// The lease in hand (at most half the burst) is spent first; after it,
	// the local bucket: its burst, then the rate.
	lo, hi := custom.Rate*down.Seconds(), custom.Rate*down.Seconds()+float64(custom.Burst)+float64(custom.Burst)/2
	t.Logf("Redis down %v: %d decisions, %d local, %d from the lease (%d of its tokens), %d admitted, want within [%.0f, %.0f]", down, len(evs), local, leased, leasedTokens, admitted, lo, hi)
	// Its refusals come only while the bucket was last found short: at most
	// the time it refills half its burst, or one lease span, 4 a millisecond.
	window := min(time.Duration(float64(custom.Burst/2)/custom.Rate*float64(time.Second)), 100*time.Millisecond)
	if refused := leased - leasedTokens; refused > 4*int(window/time.Millisecond) {
		t.Errorf("%d refusals by the lease, want at most %v of them", refused, window)
	}
	if leasedTokens > custom.Burst/2 || local != len(evs)-leased {
		t.Errorf("%d decisions from the lease (%d admitted), %d local of %d", leased, leasedTokens, local, len(evs))
	}
	if float64(admitted) < lo || float64(admitted) > hi {
		t.Errorf("admitted %d with Redis down for %v, want within [%.0f, %.0f]: neither refuse all nor admit unbounded", admitted, down, lo, hi)
	}
}

// outageRecovered checks, with Redis restarted, that l returns to it by
// itself, and logged going into fallback and out of it once each.
func outageRecovered(t *testing.T, l *Limiter, clk *testenv.Clock, retry time.Duration, logs *logRecorder) {
	t.Helper()
	// go-redis itself backs off dialling (once per second, in real time)
	// after PoolSize failed dials: probe every RetryEvery of the test's
	// clock until a decision comes from Redis, within a generous deadline.
	var back Decision
	testenv.Eventually(t, "a decision by the restarted Redis", func() error {
		clk.Add(retry)
		d, err := l.Allow(context.Background(), "acme", invoicing.Live)
		if err != nil {
			t.Fatal(err)
		}
		back = d
		return testenv.Want(d.Local, false, "decided locally")
	})
	if back.Limit != liveDef {
		t.Errorf("after the restart: %+v, want decided by the new Redis at the default", back)
	}
	if l.Fallback() {
		t.Error("Fallback() = true with Redis back")
	}
	warns, infos := 0, 0
	for _, m := range logs.messages() {
		switch m {
		case "WARN tenants: Redis unreachable; deciding rate limits locally per instance":
			warns++
		case "INFO tenants: Redis reachable again; rate limits are global again":
			infos++
		}
	}
	if warns != 1 || infos != 1 {
		t.Errorf("logged %d entries into and %d out of fallback, want 1 each: %q", warns, infos, logs.messages())
	}
}
