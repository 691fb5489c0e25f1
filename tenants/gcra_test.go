package tenants

import (
	"context"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
)

// The script's arithmetic, step by step on miniredis, whose clock (what the
// script reads with TIME) the test sets. Limit 10/s, burst 3: one request
// every 100ms, three at once.
func TestGCRASteps(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb, mr := testenv.Miniredis(t)
	l := newLimiter(Config{Redis: rdb, LiveDefault: Limit{Rate: 10, Burst: 3}, Logger: discard()})
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	ms := time.Millisecond
	for i, step := range []struct {
		at        time.Duration
		allowed   bool
		remaining int
		retry     time.Duration
		reset     time.Duration
	}{
		{0, true, 2, 0, 100 * ms},
		{0, true, 1, 0, 200 * ms},
		{0, true, 0, 0, 300 * ms},
		{0, false, 0, 100 * ms, 300 * ms},
		{0, false, 0, 100 * ms, 300 * ms}, // a rejection takes nothing
		{50 * ms, false, 0, 50 * ms, 250 * ms},
		{100 * ms, true, 0, 0, 300 * ms}, // recovered after exactly 1/rate
		{100 * ms, false, 0, 100 * ms, 300 * ms},
		{250 * ms, true, 0, 0, 250 * ms},
		{1000 * ms, true, 2, 0, 100 * ms}, // idle long enough: full again
		{1050 * ms, true, 1, 0, 150 * ms},
	} {
		mr.SetTime(t0.Add(step.at))
		d, err := l.Allow(ctx, "acme", invoicing.Live)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		want := Decision{Allowed: step.allowed, Limit: Limit{10, 3}, Remaining: step.remaining, RetryAfter: step.retry, Reset: step.reset}
		if d != want {
			t.Errorf("step %d at +%v: got %+v, want %+v", i, step.at, d, want)
		}
	}
	// The TAT expires when the bucket would be full again: idle companies
	// leave nothing behind.
	if ttl := mr.TTL(tatKey("tenants:", "acme", invoicing.Live)); ttl != 150*ms {
		t.Errorf("TAT key TTL = %v, want 150ms", ttl)
	}
}

// Raising a limit takes effect at once, even for a company deep in debt under
// the old one: its bucket counts as empty under the new limit, so it waits one
// new interval, not the old one.
func TestGCRARaisedLimitIsNotHeldBackByOldDebt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb, mr := testenv.Miniredis(t)
	l := newLimiter(Config{Redis: rdb, Logger: discard()})
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	mr.SetTime(t0)
	if err := l.SetLimit(ctx, "acme", invoicing.Live, Limit{Rate: 0.1, Burst: 1}); err != nil {
		t.Fatal(err)
	}
	if d, _ := l.Allow(ctx, "acme", invoicing.Live); !d.Allowed {
		t.Fatalf("first request rejected: %+v", d)
	}
	if d, _ := l.Allow(ctx, "acme", invoicing.Live); d.Allowed || d.RetryAfter != 10*time.Second {
		t.Fatalf("second request at 0.1/s: %+v, want rejected for 10s", d)
	}
	if err := l.SetLimit(ctx, "acme", invoicing.Live, Limit{Rate: 100, Burst: 1}); err != nil {
		t.Fatal(err)
	}
	mr.SetTime(t0.Add(10 * time.Millisecond))
	d, err := l.Allow(ctx, "acme", invoicing.Live)
	if err != nil || d.Allowed || d.RetryAfter != 10*time.Millisecond || d.Limit != (Limit{100, 1}) {
		t.Fatalf("just after raising to 100/s: %+v, %v; want rejected for one new interval (10ms)", d, err)
	}
	mr.SetTime(t0.Add(20 * time.Millisecond))
	d, err = l.Allow(ctx, "acme", invoicing.Live)
	if err != nil || !d.Allowed {
		t.Fatalf("one new interval later: %+v, %v; want admitted", d, err)
	}
}

// Lowering a limit applies the new rate from the next request on; what is
// left of the bucket is carried over, never more than the new burst.
func TestGCRALoweredLimit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb, mr := testenv.Miniredis(t)
	l := newLimiter(Config{Redis: rdb, LiveDefault: Limit{Rate: 1000, Burst: 1000}, Logger: discard()})
	mr.SetTime(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	if err := l.SetLimit(ctx, "acme", "", Limit{Rate: 1, Burst: 5}); err != nil {
		t.Fatal(err)
	}
	admitted := 0
	for range 100 {
		if d, _ := l.Allow(ctx, "acme", invoicing.Live); d.Allowed {
			admitted++
		}
	}
	if admitted != 5 {
		t.Errorf("admitted %d of 100 at once under burst 5, want 5", admitted)
	}
}
