package tenants

import (
	"context"
	"errors"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
	"github.com/redis/go-redis/v9"
)

func newClock() *testenv.Clock { return testenv.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)) }

// callCounter counts the commands a client sends.
type callCounter struct{ n atomic.Int64 }

func (c *callCounter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *callCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmd)
	}
}
func (c *callCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestFallbackWhenRedisIsDown: with Redis down, decisions are local at the
// last known limit, a dead Redis is probed once per RetryEvery and never
// waited for in between, and the limiter returns to Redis by itself.
func TestFallbackWhenRedisIsDown(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb, mr := downableMiniredis(t)
	calls := &callCounter{}
	rdb.AddHook(calls)
	clk := newClock()
	logs := &logRecorder{}
	l := newLimiter(Config{Redis: rdb, Now: clk.Now, RetryEvery: time.Second, Logger: slogOf(logs)})
	custom := Limit{Rate: 10, Burst: 5}
	if err := l.SetLimit(ctx, "acme", invoicing.Live, custom); err != nil {
		t.Fatal(err)
	}
	if d := firstDecision(t, l, "acme", invoicing.Live); d.Local || d.Limit != custom {
		t.Fatalf("with Redis: %+v", d)
	}

	mr.Close()
	fallbackAtLastLimit(t, l, custom)
	fallbackWaitsForNothing(t, l, clk, calls)

	// After RetryEvery exactly one request probes, and fails back to local.
	clk.Add(time.Second)
	before := calls.n.Load()
	for range 20 {
		if d := firstDecision(t, l, "acme", invoicing.Live); !d.Local {
			t.Fatalf("decided by a dead Redis: %+v", d)
		}
	}
	if n := calls.n.Load() - before; n != 1 {
		t.Errorf("%d Redis calls in one RetryEvery, want 1 probe", n)
	}

	// Redis is back: the next probe returns to it by itself.
	if err := mr.Restart(); err != nil {
		t.Fatal(err)
	}
	clk.Add(time.Second)
	d := firstDecision(t, l, "acme", invoicing.Live)
	if d.Local || l.Fallback() {
		t.Errorf("after Redis returned and RetryEvery passed: %+v, Fallback() = %v", d, l.Fallback())
	}
	want := []string{
		"WARN tenants: the Redis client ignores context deadlines (ContextTimeoutEnabled is off); a hung Redis delays decisions by the client's ReadTimeout, not RedisTimeout",
		"WARN tenants: Redis unreachable; deciding rate limits locally per instance",
		"INFO tenants: Redis reachable again; rate limits are global again",
	}
	if got := logs.messages(); !slices.Equal(got, want) {
		t.Errorf("logged %q, want %q", got, want)
	}
}

// fallbackAtLastLimit checks, with Redis just gone, that 20 requests at once
// are decided locally at the last known limit (custom): its burst admitted,
// the rest told when to retry.
func fallbackAtLastLimit(t *testing.T, l *Limiter, custom Limit) {
	t.Helper()
	admitted := 0
	for i := range 20 {
		d, err := l.Allow(context.Background(), "acme", invoicing.Live)
		if err != nil {
			t.Fatalf("request %d with Redis down: %v", i, err)
		}
		if !d.Local || d.Limit != custom {
			t.Fatalf("request %d with Redis down: %+v, want local at the last known %+v", i, d, custom)
		}
		if d.Allowed {
			admitted++
		} else if d.RetryAfter <= 0 || d.RetryAfter > custom.interval() {
			t.Errorf("request %d: retry after %v, want within (0, %v]", i, d.RetryAfter, custom.interval())
		}
	}
	if admitted != custom.Burst {
		t.Errorf("admitted %d of 20 at once in fallback, want the burst %d", admitted, custom.Burst)
	}
	if !l.Fallback() {
		t.Error("Fallback() = false with Redis down")
	}
}

// fallbackWaitsForNothing checks that within RetryEvery no request waits for
// the dead Redis (no call reaches it), the local bucket refills, and a
// company never seen gets the default from its own bucket.
func fallbackWaitsForNothing(t *testing.T, l *Limiter, clk *testenv.Clock, calls *callCounter) {
	t.Helper()
	before := calls.n.Load()
	clk.Add(300 * time.Millisecond)
	admitted := 0
	for range 20 {
		if d := firstDecision(t, l, "acme", invoicing.Live); d.Allowed {
			admitted++
		}
	}
	if n := calls.n.Load() - before; n != 0 {
		t.Errorf("%d Redis calls before RetryEvery passed, want 0", n)
	}
	if admitted != 3 {
		t.Errorf("admitted %d after 300ms at 10/s, want 3", admitted)
	}
	// A company never seen gets the default, from its own bucket.
	if d := firstDecision(t, l, "newco", invoicing.Test); !d.Local || !d.Allowed || d.Limit != testDef {
		t.Errorf("unseen company in fallback: %+v, want local at the TEST default", d)
	}
}

// A caller that gave up is not a Redis failure: its error is returned and the
// instance stays global.
func TestAllowCanceledIsNotFallback(t *testing.T) {
	t.Parallel()
	rdb, _ := testenv.Miniredis(t)
	l := newLimiter(Config{Redis: rdb, Logger: discard()})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := l.Allow(ctx, "acme", invoicing.Live); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled: %v, want context.Canceled", err)
	}
	if l.Fallback() {
		t.Error("a canceled caller put the instance in fallback")
	}
}

// A Redis that accepts connections and never answers costs one RedisTimeout,
// then the instance decides locally. It needs ContextTimeoutEnabled. The
// client's own ReadTimeout is an hour, so that a decision that comes at all
// came from RedisTimeout.
func TestFallbackWhenRedisHangs(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		conns []net.Conn
	)
	defer func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	}()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	rdb := redis.NewClient(&redis.Options{Addr: ln.Addr().String(), ContextTimeoutEnabled: true, MaxRetries: -1,
		ReadTimeout: time.Hour, WriteTimeout: time.Hour})
	defer rdb.Close()
	l := New(Config{Redis: rdb, RedisTimeout: 30 * time.Millisecond, Logger: discard()})
	type result struct {
		d   Decision
		err error
	}
	got := make(chan result, 1)
	go func() {
		d, err := l.Allow(context.Background(), "acme", invoicing.Live)
		got <- result{d, err}
	}()
	select {
	case r := <-got:
		if r.err != nil || !r.d.Local || !r.d.Allowed || r.d.Limit != liveDef {
			t.Fatalf("hung Redis: %+v, %v; want admitted locally at the default", r.d, r.err)
		}
	case <-time.After(testenv.Patience):
		t.Fatalf("no decision after %v on a hung Redis: RedisTimeout (30ms) was not applied", testenv.Patience)
	}
}
