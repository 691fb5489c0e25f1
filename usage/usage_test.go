package usage

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
)

const (
	coA = "0b7e3c6a-5f1d-4c1e-9a51-2d3f4e5a6b7c"
	coB = "7d1f0e2a-9c3b-4d5e-8f60-718293a4b5c6"
)

var ctx = context.Background()

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// newCounter never flushes on its own during a test (FlushEvery is long):
// tests flush when they mean to.
func newCounter(t *testing.T, rdb redis.UniversalClient, prefix string, clk *testenv.Clock, edit func(*Config)) *Counter {
	t.Helper()
	cfg := Config{Redis: rdb, Prefix: prefix, FlushEvery: time.Hour, Now: clk.Now, Logger: quiet()}
	if edit != nil {
		edit(&cfg)
	}
	c := New(cfg)
	t.Cleanup(func() { _ = c.Close(ctx) })
	return c
}

func TestDayBoundaries(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		utc  string
		date string
	}{
		{"2026-03-01T22:59:59Z", "2026-03-01"},
		{"2026-03-01T23:00:00Z", "2026-03-02"}, // midnight in Luanda (UTC+1)
		{"2026-12-31T23:30:00Z", "2027-01-01"},
		{"2024-02-28T23:00:00Z", "2024-02-29"},
	} {
		tm, _ := time.Parse(time.RFC3339, tc.utc)
		if got := dateOf(dayOf(tm)); got != tc.date {
			t.Errorf("%s: day %s, want %s", tc.utc, got, tc.date)
		}
	}
}

func TestCountsPerDayModeAndClass(t *testing.T) {
	t.Parallel()
	testenv.RedisBackends(t, func(t *testing.T, rdb *redis.Client, prefix string) {
		clk := testenv.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
		c := newCounter(t, rdb, prefix, clk, nil)
		for range 3 {
			c.Add(coA, "LIVE", 200)
		}
		c.Add(coA, "LIVE", 201)
		c.Add(coA, "LIVE", 404)
		c.Add(coA, "TEST", 429)
		c.Add(coA, "TEST", 503)
		c.Add(coB, "LIVE", 200)
		c.Add(coA, "PROD", 200) // not a mode: ignored
		c.Add("", "LIVE", 200)  // no company: ignored
		if err := c.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		clk.Set(time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC))
		c.Add(coA, "LIVE", 200)
		if err := c.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		// A second flush of the same counters adds to them.
		c.Add(coA, "LIVE", 200)
		if err := c.Flush(ctx); err != nil {
			t.Fatal(err)
		}

		days, err := c.Days(ctx, coA, 3)
		if err != nil {
			t.Fatal(err)
		}
		want := []Day{
			{Date: "2026-02-28", Live: map[string]int64{}, Test: map[string]int64{}},
			{Date: "2026-03-01", Total: 7, Live: map[string]int64{"2xx": 4, "4xx": 1}, Test: map[string]int64{"4xx": 1, "5xx": 1}, RateLimited: Limited{Test: 1}},
			{Date: "2026-03-02", Total: 2, Live: map[string]int64{"2xx": 2}, Test: map[string]int64{}},
		}
		if !equalDays(days, want) {
			t.Fatalf("Days = %+v\nwant %+v", days, want)
		}
		days, _ = c.Days(ctx, coB, 2)
		if days[0].Total != 1 || days[0].Live["2xx"] != 1 || days[1].Total != 0 {
			t.Fatalf("company B: %+v", days)
		}
		ttl, err := rdb.TTL(ctx, c.dayKey(coA, dayOf(clk.Now()))).Result()
		if err != nil || ttl < 399*24*time.Hour || ttl > 400*24*time.Hour {
			t.Fatalf("TTL = %v %v, want about 400 days", ttl, err)
		}
		if _, err := c.Days(ctx, coA, 0); err == nil {
			t.Error("0 days accepted")
		}
		if _, err := c.Days(ctx, "{x}", 1); !errors.Is(err, invoicing.ErrInvalidCompany) {
			t.Errorf("brace company: %v", err)
		}
	})
}

func equalDays(a, b []Day) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Date != b[i].Date || a[i].Total != b[i].Total || !equalMap(a[i].Live, b[i].Live) || !equalMap(a[i].Test, b[i].Test) ||
			a[i].RateLimited != b[i].RateLimited {
			return false
		}
	}
	return true
}

func equalMap(a, b map[string]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// failing makes every command fail while down is set.
type failing struct{ down atomic.Bool }

func (f *failing) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) { return next(ctx, network, addr) }
}
func (f *failing) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (f *failing) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if f.down.Load() {
			err := errors.New("injected outage")
			for _, c := range cmds {
				c.SetErr(err)
			}
			return err
		}
		return next(ctx, cmds)
	}
}

// TestFailedFlushKeepsCounts: counts survive a Redis outage and are written
// by the first flush that works, bounded by MaxPending.
func TestFailedFlushKeepsCounts(t *testing.T) {
	t.Parallel()
	rdb, _ := testenv.Miniredis(t)
	f := &failing{}
	rdb.AddHook(f)
	clk := testenv.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	c := newCounter(t, rdb, "u:", clk, func(cfg *Config) { cfg.MaxPending = 2 })
	c.Add(coA, "LIVE", 200)
	c.Add(coA, "LIVE", 200)
	f.down.Store(true)
	if err := c.Flush(ctx); err == nil {
		t.Fatal("flush with Redis down succeeded")
	}
	c.Add(coA, "LIVE", 500)
	c.Add(coB, "LIVE", 200) // a third distinct counter: over MaxPending, dropped
	if err := c.Flush(ctx); err == nil {
		t.Fatal("flush with Redis down succeeded")
	}
	f.down.Store(false)
	if err := c.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	days, err := c.Days(ctx, coA, 1)
	if err != nil || days[0].Live["2xx"] != 2 || days[0].Live["5xx"] != 1 {
		t.Fatalf("after recovery: %+v %v", days, err)
	}
	if days, _ := c.Days(ctx, coB, 1); days[0].Total != 0 {
		t.Fatalf("dropped count written: %+v", days)
	}
}

// TestPeriodicFlushAndClose: counts reach Redis without an explicit Flush,
// and Close writes what is left.
func TestPeriodicFlushAndClose(t *testing.T) {
	t.Parallel()
	rdb, prefix := testenv.Redis(t)
	clk := testenv.NewClock(time.Now())
	c := New(Config{Redis: rdb, Prefix: prefix, FlushEvery: 20 * time.Millisecond, Now: clk.Now, Logger: quiet()})
	c.Add(coA, "TEST", 200)
	testenv.Eventually(t, "the count to be flushed", func() error {
		days, err := c.Days(ctx, coA, 1)
		if err != nil {
			return err
		}
		return testenv.Want(days[0].Test["2xx"], 1, "TEST 2xx")
	})
	c.Add(coA, "TEST", 200)
	if err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if days, _ := c.Days(ctx, coA, 1); days[0].Test["2xx"] != 2 {
		t.Fatalf("after Close: %+v", days)
	}
}

// BenchmarkAdd is the request path's cost of counting.
func BenchmarkAdd(b *testing.B) {
	rdb, _ := testenv.Miniredis(b)
	c := New(Config{Redis: rdb, Logger: quiet()})
	b.Cleanup(func() { _ = c.Close(ctx) })
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			c.Add(coA, "LIVE", 200)
		}
	})
}
