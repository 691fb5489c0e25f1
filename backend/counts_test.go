package backend

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/internal/testenv"
)

// counter is a count query over a settable number of rows. When gate is set,
// each count waits for a value on it, so a test controls when counts end.
type counter struct {
	rows  atomic.Int64
	calls atomic.Int64
	err   atomic.Pointer[error]
	gate  chan struct{}
}

func (c *counter) count(ctx context.Context) (int64, error) {
	c.calls.Add(1)
	n := c.rows.Load() // the snapshot is taken when the count begins
	if c.gate != nil {
		<-c.gate
	}
	if p := c.err.Load(); p != nil {
		return 0, *p
	}
	return n, nil
}

const testMaxAge = 10 * time.Second

func newTestCache(clock *testenv.Clock) *countCache {
	return newCountCache(testMaxAge, 100, clock.Now)
}

var keyA = countKey{company: "co-a", query: "all"}

func mustTotal(t *testing.T, c *countCache, k countKey, cnt *counter) int64 {
	t.Helper()
	n, err := c.total(context.Background(), k, cnt.count)
	if err != nil {
		t.Fatalf("total: %v", err)
	}
	return n
}

// waitIdle waits until no count runs for k (background refreshes finish).
func waitIdle(t *testing.T, c *countCache, k countKey) {
	t.Helper()
	testenv.Eventually(t, "the count to end", func() error {
		c.mu.Lock()
		defer c.mu.Unlock()
		e := c.entries[k]
		return testenv.Want(e != nil && e.flight != nil, false, "count running")
	})
}

// waitingForCount is what testenv.GoroutinesWaitingIn counts: requests
// waiting for a count in flight. The tests that count them do not run in
// parallel.
const waitingForCount = "github.com/invoicing-ao/gateway/backend.(*countCache).totalBelow"

func TestCountCacheSmallListsAreExact(t *testing.T) {
	t.Parallel()
	clock := testenv.NewClock(time.Unix(1e9, 0))
	c := newTestCache(clock)
	var cnt counter
	for i := int64(1); i <= 5; i++ {
		cnt.rows.Store(i * 10) // 10..50, all below exactBelow (100)
		if got := mustTotal(t, c, keyA, &cnt); got != i*10 {
			t.Fatalf("total %d, want %d", got, i*10)
		}
	}
	if cnt.calls.Load() != 5 || len(c.entries) != 0 {
		t.Fatalf("%d counts, %d entries; want 5 counts and nothing kept", cnt.calls.Load(), len(c.entries))
	}
}

// TestCountCacheStalenessBound walks the clock through a total's life: kept
// and served while young, refreshed in the background from half its age on,
// never served at or past maxAge.
// Not parallel: it counts the requests of the process waiting for a count.
func TestCountCacheStalenessBound(t *testing.T) {
	clock := testenv.NewClock(time.Unix(1e9, 0))
	c := newTestCache(clock)
	var cnt counter
	cnt.rows.Store(1000)
	if got := mustTotal(t, c, keyA, &cnt); got != 1000 {
		t.Fatalf("first total %d", got)
	}
	cnt.rows.Store(1500) // rows added after the count

	clock.Add(testMaxAge/2 - time.Millisecond)
	if got := mustTotal(t, c, keyA, &cnt); got != 1000 || cnt.calls.Load() != 1 {
		t.Fatalf("young total %d after %d counts, want the kept 1000 after 1", got, cnt.calls.Load())
	}

	// Half the age: still the kept total, and one recount in the background.
	cnt.gate = make(chan struct{})
	clock.Add(time.Millisecond)
	for i := 0; i < 3; i++ {
		if got := mustTotal(t, c, keyA, &cnt); got != 1000 {
			t.Fatalf("total %d while refreshing, want the kept 1000", got)
		}
	}
	cnt.gate <- struct{}{}
	waitIdle(t, c, keyA)
	if cnt.calls.Load() != 2 {
		t.Fatalf("%d counts, want one background refresh", cnt.calls.Load())
	}
	if got := mustTotal(t, c, keyA, &cnt); got != 1500 {
		t.Fatalf("after the refresh: %d, want 1500", got)
	}

	// maxAge after the refresh began, with a recount stuck: the request waits
	// for it instead of serving a total that old.
	cnt.rows.Store(2000)
	clock.Add(testMaxAge)
	done := make(chan int64)
	go func() {
		n, _ := c.total(context.Background(), keyA, cnt.count)
		done <- n
	}()
	testenv.Eventually(t, "the request to wait for the count", func() error {
		select {
		case n := <-done:
			t.Fatalf("served %d at maxAge without counting", n)
		default:
		}
		return testenv.Want(testenv.GoroutinesWaitingIn(waitingForCount), 1, "requests waiting")
	})
	cnt.gate <- struct{}{}
	if got := <-done; got != 2000 {
		t.Fatalf("total at maxAge %d, want a fresh 2000", got)
	}
}

// Not parallel: it counts the requests of the process waiting for a count.
func TestCountCacheSingleFlight(t *testing.T) {
	clock := testenv.NewClock(time.Unix(1e9, 0))
	c := newTestCache(clock)
	cnt := counter{gate: make(chan struct{})}
	cnt.rows.Store(5000)
	const n = 50
	var wg sync.WaitGroup
	results := make(chan int64, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := c.total(context.Background(), keyA, cnt.count)
			if err != nil {
				t.Error(err)
			}
			results <- v
		}()
	}
	// Every request waits for the one count before it ends (or starts its
	// own, which the count of calls below catches).
	testenv.Eventually(t, "every request to wait for the count", func() error {
		return testenv.Want(testenv.GoroutinesWaitingIn(waitingForCount), n, "requests waiting")
	})
	close(cnt.gate)
	wg.Wait()
	close(results)
	for v := range results {
		if v != 5000 {
			t.Fatalf("a waiter got %d", v)
		}
	}
	if cnt.calls.Load() != 1 {
		t.Fatalf("%d counts for %d concurrent misses, want 1", cnt.calls.Load(), n)
	}
}

// TestCountCacheKeys: a filter or a company never gets another's total.
func TestCountCacheKeys(t *testing.T) {
	t.Parallel()
	clock := testenv.NewClock(time.Unix(1e9, 0))
	c := newTestCache(clock)
	keys := []countKey{
		{company: "co-a", query: "all"},
		{company: "co-a", query: "status=PAID"},
		{company: "co-a", query: "type=FT"},
		{company: "co-b", query: "all"}, // another tenant, same list
		{company: "co-b", query: "status=PAID"},
	}
	counters := make([]*counter, len(keys))
	for i, k := range keys {
		counters[i] = &counter{}
		counters[i].rows.Store(int64(1000 * (i + 1)))
		if got := mustTotal(t, c, k, counters[i]); got != int64(1000*(i+1)) {
			t.Fatalf("%+v: %d", k, got)
		}
	}
	for i, k := range keys { // the kept totals, each its own
		if got := mustTotal(t, c, k, counters[i]); got != int64(1000*(i+1)) || counters[i].calls.Load() != 1 {
			t.Fatalf("%+v: %d after %d counts, want its own %d after 1", k, got, counters[i].calls.Load(), 1000*(i+1))
		}
	}
}

func TestCountCacheErrors(t *testing.T) {
	t.Parallel()
	clock := testenv.NewClock(time.Unix(1e9, 0))
	c := newTestCache(clock)
	var cnt counter
	cnt.rows.Store(1000)
	boom := errors.New("database down")
	cnt.err.Store(&boom)
	if _, err := c.total(context.Background(), keyA, cnt.count); !errors.Is(err, boom) {
		t.Fatalf("first count failing: %v", err)
	}
	if len(c.entries) != 0 {
		t.Fatal("a failed count left an entry")
	}
	cnt.err.Store(nil)
	if got := mustTotal(t, c, keyA, &cnt); got != 1000 {
		t.Fatalf("after recovery: %d", got)
	}
	// A failing background refresh keeps the old total, within its bound.
	cnt.err.Store(&boom)
	clock.Add(testMaxAge / 2)
	if got := mustTotal(t, c, keyA, &cnt); got != 1000 {
		t.Fatalf("total %d", got)
	}
	waitIdle(t, c, keyA)
	clock.Add(testMaxAge/2 - time.Millisecond)
	if got := mustTotal(t, c, keyA, &cnt); got != 1000 {
		t.Fatalf("total after a failed refresh: %d, want the kept 1000", got)
	}
	waitIdle(t, c, keyA)
	clock.Add(time.Millisecond)
	if _, err := c.total(context.Background(), keyA, cnt.count); !errors.Is(err, boom) {
		t.Fatalf("at maxAge with the database down: %v, want the count's error", err)
	}
}

// A caller that gives up does not cancel the count others wait for, and its
// result is kept.
func TestCountCacheCallerCancels(t *testing.T) {
	t.Parallel()
	clock := testenv.NewClock(time.Unix(1e9, 0))
	c := newTestCache(clock)
	cnt := counter{gate: make(chan struct{})}
	cnt.rows.Store(1000)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error)
	go func() {
		_, err := c.total(ctx, keyA, func(cctx context.Context) (int64, error) {
			n, err := cnt.count(cctx)
			if cctx.Err() != nil {
				return 0, cctx.Err()
			}
			return n, err
		})
		errc <- err
	}()
	testenv.Eventually(t, "the count to begin", func() error { return testenv.Want(cnt.calls.Load(), 1, "counts") })
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled caller: %v", err)
	}
	close(cnt.gate)
	waitIdle(t, c, keyA)
	if got := mustTotal(t, c, keyA, &cnt); got != 1000 || cnt.calls.Load() != 1 {
		t.Fatalf("total %d after %d counts; want the detached count's 1000", got, cnt.calls.Load())
	}
}

func TestCountCacheBounded(t *testing.T) {
	t.Parallel()
	clock := testenv.NewClock(time.Unix(1e9, 0))
	c := newTestCache(clock)
	c.maxEntries = 2
	var cnt counter
	cnt.rows.Store(1000)
	for _, q := range []string{"a", "b", "c", "c"} {
		mustTotal(t, c, countKey{company: "co", query: q}, &cnt)
	}
	if len(c.entries) != 2 || cnt.calls.Load() != 4 {
		t.Fatalf("%d entries after %d counts; want 2 kept and the third list counted each time", len(c.entries), cnt.calls.Load())
	}
	clock.Add(testMaxAge) // old entries make room
	mustTotal(t, c, countKey{company: "co", query: "c"}, &cnt)
	if _, ok := c.entries[countKey{company: "co", query: "c"}]; !ok {
		t.Fatal("expired entries were not dropped to make room")
	}
}

func TestCountCacheDisabled(t *testing.T) {
	t.Parallel()
	clock := testenv.NewClock(time.Unix(1e9, 0))
	c := newCountCache(-1, 100, clock.Now)
	var cnt counter
	cnt.rows.Store(1000)
	mustTotal(t, c, keyA, &cnt)
	mustTotal(t, c, keyA, &cnt)
	if cnt.calls.Load() != 2 || len(c.entries) != 0 {
		t.Fatalf("disabled cache: %d counts, %d entries", cnt.calls.Load(), len(c.entries))
	}
}
