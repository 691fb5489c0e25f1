package authz

import (
	"crypto/sha256"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/invoicing-ao/gateway/internal/testenv"
)

func dg(i int) digest { return sha256.Sum256([]byte(fmt.Sprint(i))) }

func TestPosCacheBounded(t *testing.T) {
	t.Parallel()
	c := newPosCache(320)
	for i := 0; i < 5000; i++ {
		d := dg(i)
		c.put(&d, &entry{verified: int64(i)})
	}
	if n := c.len(); n > 320 {
		t.Fatalf("cache holds %d, bound 320", n)
	}
	d := dg(4999)
	if c.get(&d) == nil {
		t.Error("the newest entry was evicted")
	}
	// Refreshing an entry keeps its last-used throttle.
	e := c.get(&d)
	e.touched.Store(42)
	c.put(&d, &entry{verified: 5000})
	if got := c.get(&d); got.verified != 5000 || got.touched.Load() != 42 {
		t.Errorf("refresh lost state: %+v", got)
	}
	c.drop(&d)
	if c.get(&d) != nil {
		t.Error("drop did not drop")
	}
}

func TestNegCache(t *testing.T) {
	t.Parallel()
	c := newNegCache(64)
	for i := 0; i < 1000; i++ {
		d := dg(i)
		c.add(&d, 100, 0)
	}
	if n := c.len(); n > 64 {
		t.Fatalf("negative cache holds %d, bound 64", n)
	}
	d := dg(999)
	if !c.has(&d, 99) || c.has(&d, 100) {
		t.Error("expiry wrong")
	}
	c.drop(&d)
	if c.has(&d, 0) {
		t.Error("drop did not drop")
	}
}

// Not parallel: it counts the goroutines of the process waiting in a flight.
func TestFlightShares(t *testing.T) {
	var f flight
	var runs atomic.Int32
	release := make(chan struct{})
	d := dg(1)
	var wg sync.WaitGroup
	results := make(chan string, 20)
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k, _ := f.do(ctx, &d, func() (Key, error) {
				runs.Add(1)
				<-release
				return Key{ID: "shared"}, nil
			})
			results <- k.ID
		}()
	}
	// Release the first caller's run only once every other caller waits
	// for it (or runs its own, which the count below would catch).
	testenv.Eventually(t, "the 19 other callers to wait for the first", func() error {
		return testenv.Want(int(runs.Load())-1+testenv.GoroutinesWaitingIn("github.com/invoicing-ao/gateway/authz.(*flight).do"), 19, "waiting")
	})
	close(release)
	wg.Wait()
	close(results)
	for id := range results {
		if id != "shared" {
			t.Fatalf("caller got %q", id)
		}
	}
	if n := runs.Load(); n != 1 {
		t.Fatalf("runs = %d, want 1: callers of one digest in flight share its run", n)
	}
}
