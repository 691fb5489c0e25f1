package tenants

import (
	"context"
	"math"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
	"github.com/redis/go-redis/v9"
)

// instances returns n Limiters, each with its own Redis client as n gateway
// processes would have, sharing the real Redis under the test's prefix.
func instances(t *testing.T, n int, cfg Config) []*Limiter {
	t.Helper()
	_, prefix := testenv.Redis(t)
	opt, err := redis.ParseURL(testenv.RedisURL())
	if err != nil {
		t.Fatal(err)
	}
	opt.ContextTimeoutEnabled = true
	ls := make([]*Limiter, n)
	for i := range ls {
		rdb := redis.NewClient(opt)
		t.Cleanup(func() { _ = rdb.Close() })
		c := cfg
		c.Redis, c.Prefix = rdb, prefix
		if c.Logger == nil {
			c.Logger = discard()
		}
		ls[i] = New(c)
	}
	return ls
}

// event is one decision as a client saw it.
type event struct {
	start, end time.Time
	d          Decision
	err        error
}

// hammer sends requests of one company as fast as workers per instance can
// (pausing between requests if pause > 0), until stop, and returns every
// decision.
func hammer(ls []*Limiter, workers int, pause time.Duration, company string, mode invoicing.Mode, stop time.Time) []event {
	var (
		mu  sync.Mutex
		all []event
		wg  sync.WaitGroup
	)
	for _, l := range ls {
		for range workers {
			wg.Go(func() {
				var mine []event
				for {
					start := time.Now()
					if start.After(stop) {
						break
					}
					d, err := l.Allow(context.Background(), company, mode)
					mine = append(mine, event{start: start, end: time.Now(), d: d, err: err})
					if pause > 0 {
						time.Sleep(pause)
					}
				}
				mu.Lock()
				all = append(all, mine...)
				mu.Unlock()
			})
		}
	}
	wg.Wait()
	return all
}

// admitted counts the admitted requests that started in [from, to).
func admitted(t *testing.T, evs []event, from, to time.Time) (n int) {
	t.Helper()
	for _, e := range evs {
		if e.err != nil {
			t.Fatalf("decision error: %v", e.err)
		}
		if e.d.Allowed && !e.start.Before(from) && e.start.Before(to) {
			n++
		}
	}
	return n
}

// Three instances sharing one Redis together admit what one would: over a
// window at the limit, rate×window + burst, within 5%. The 10-second
// window runs with TENANTS_LONG=1; a 2-second one always.
func TestGlobalAccuracy(t *testing.T) {
	window := 2 * time.Second
	if os.Getenv("TENANTS_LONG") == "1" {
		window = 10 * time.Second
	}
	lim := Limit{Rate: 100, Burst: 10}
	ls := instances(t, 3, Config{LiveDefault: lim})
	start := time.Now()
	evs := hammer(ls, 4, 0, "acme", invoicing.Live, start.Add(window))
	got := admitted(t, evs, start, start.Add(window))
	want := lim.Rate*window.Seconds() + float64(lim.Burst)
	per := map[bool]int{}
	for _, e := range evs {
		per[e.d.Local]++
	}
	t.Logf("window %v: %d requests (%d decided locally), %d admitted, want %.0f", window, len(evs), per[true], got, want)
	if per[true] != 0 {
		t.Errorf("%d decisions were local with Redis up", per[true])
	}
	if len(evs) < int(3*want) {
		t.Fatalf("only %d requests: not enough load to test the limit", len(evs))
	}
	if math.Abs(float64(got)-want) > 0.05*want {
		t.Errorf("admitted %d in %v, want %.0f ± 5%%", got, window, want)
	}
}

// A limit changed under load (from a fourth client, as the admin API would)
// is applied by every instance from its next decision on: every decision that
// started after the change reports the new limit, and the second after the
// change admits at the new rate.
func TestLimitChangeUnderLoad(t *testing.T) {
	ls := instances(t, 4, Config{LiveDefault: Limit{Rate: 100, Burst: 10}})
	admin, workers := ls[3], ls[:3]
	ctx := context.Background()
	changes := []Limit{{Rate: 300, Burst: 10}, {Rate: 50, Burst: 10}}
	var changed []time.Time
	start := time.Now()
	stop := start.Add(time.Duration(len(changes)+1) * 1200 * time.Millisecond)
	done := make(chan []event)
	go func() { done <- hammer(workers, 4, 0, "acme", invoicing.Live, stop) }()
	for i, lim := range changes {
		time.Sleep(time.Until(start.Add(time.Duration(i+1) * 1200 * time.Millisecond)))
		if err := admin.SetLimit(ctx, "acme", invoicing.Live, lim); err != nil {
			t.Fatal(err)
		}
		changed = append(changed, time.Now())
	}
	evs := <-done
	for i, lim := range changes {
		from, to := changed[i], changed[i].Add(time.Second)
		var stale int
		for _, e := range evs {
			if e.start.After(from) && e.start.Before(to) && e.d.Limit != lim {
				stale++
			}
		}
		if stale > 0 {
			t.Errorf("change %d to %+v: %d decisions started after it applied another limit", i, lim, stale)
		}
		got := admitted(t, evs, from, to)
		// The second after the change: the new rate, plus at most one burst
		// carried over from before it.
		lo, hi := 0.95*lim.Rate, 1.05*(lim.Rate+float64(lim.Burst))
		t.Logf("change %d to %+v: %d admitted in the second after it, want within [%.0f, %.0f]", i, lim, got, lo, hi)
		if float64(got) < lo || float64(got) > hi {
			t.Errorf("change %d to %+v: %d admitted in the second after it, want within [%.0f, %.0f]", i, lim, got, lo, hi)
		}
	}
}
