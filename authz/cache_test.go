package authz

import (
	"crypto/sha256"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func dg(i int) digest { return sha256.Sum256([]byte(fmt.Sprint(i))) }

func TestPosCacheBounded(t *testing.T) {
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
	// Let the callers pile up behind the first, then release it.
	deadline := time.Now().Add(2 * time.Second)
	for runs.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond)
	close(release)
	wg.Wait()
	close(results)
	for id := range results {
		if id != "shared" {
			t.Fatalf("caller got %q", id)
		}
	}
	if n := runs.Load(); n < 1 || n > 20 {
		t.Fatalf("runs = %d", n)
	}
	if n := runs.Load(); n != 1 {
		t.Logf("%d runs (callers that arrived after the release start their own)", n)
	}
}
