package admin_test

import (
	"context"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/invoicing-ao/gateway/admin"
	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
	"github.com/invoicing-ao/gateway/shape"
	"github.com/invoicing-ao/gateway/tenants"
)

// The what-if against reality, on the real Redis and the real clock (the
// limiter's buckets run on Redis's time): three limiter instances, each with
// its recorder, serve a company's bursty traffic under a first limit; the
// what-if's line for it is what the three refused, exactly; the what-if is
// asked for another limit; that limit is set, and the same traffic is
// offered to it again: the refusals predicted and the real ones agree within
// ±10 % (docs/performance.md has the figures). For a limit too low to lease
// (each request one decision in Redis), a leased one, each second's requests
// sent together at its start, and bursts within 100 ms and 50 ms, as sync
// jobs send them.
func TestWhatIfAgreesWithTheLimiter(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs 75 s of traffic in real time")
	}
	base := []int{15, 15, 120, 120, 15, 15, 15, 200, 15, 80, 80, 15} // requests in each second
	unlimited := tenants.Limit{Rate: tenants.MaxRate, Burst: tenants.MaxBurst}
	for _, tc := range []struct {
		name       string
		first, lim tenants.Limit
		times      []time.Duration
	}{
		{"exact", unlimited, tenants.Limit{Rate: 20, Burst: 40}, perSecond(base, 1, false)},
		{"leased", unlimited, tenants.Limit{Rate: 200, Burst: 400}, perSecond(base, 10, false)},
		{"each second's together", unlimited, tenants.Limit{Rate: 20, Burst: 40}, perSecond(base, 1, true)},
		{"130 within 100 ms", tenants.Limit{Rate: 50, Burst: 100}, tenants.Limit{Rate: 30, Burst: 60}, burstsOf(130, 100*time.Millisecond, 1500*time.Millisecond, 9)},
		{"40 within 50 ms every 2 s", tenants.Limit{Rate: 10, Burst: 20}, tenants.Limit{Rate: 5, Burst: 25}, burstsOf(40, 50*time.Millisecond, 2*time.Second, 7)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // each on its own Redis prefix
			c := newCluster(t)
			if tc.first != unlimited {
				if err := c.limiters[0].SetLimit(context.Background(), coA, invoicing.Live, tc.first); err != nil {
					t.Fatal(err)
				}
			}
			start := c.offer(t, tc.times)
			v, err := c.adm.Limits.WhatIf(context.Background(), admin.WhatIfQuery{CompanyID: coA, Mode: "LIVE", Rate: tc.lim.Rate, Burst: tc.lim.Burst,
				Since: start.Add(-time.Second), MaxRefused: admin.DefaultMaxRefused})
			if err != nil {
				t.Fatal(err)
			}
			// What the prediction says of itself: the retries of traffic
			// that met refusals, and bursts within a sixteenth or two
			// (said of the bursty cases; of even traffic only where a busy
			// machine's sender bunched requests, which is true then too).
			short, known := map[string]bool{"each second's together": true, "40 within 50 ms every 2 s": true}[tc.name]
			if slices.Contains(v.Approximate, "retries") != (c.refused.Load() > 0) || (known && slices.Contains(v.Approximate, "short_bursts") != short) {
				t.Errorf("approximate %v (%d short bursts)", v.Approximate, v.ShortBursts)
			}
			if v.Offered != int64(len(tc.times)) || v.Current.Refused != c.refused.Load() || !v.Current.Recorded {
				t.Fatalf("recorded %d requests (want %d), %d refused under the first limit (the instances refused %d)",
					v.Offered, len(tc.times), v.Current.Refused, c.refused.Load())
			}
			// The limit is set on three fresh instances (on a Redis prefix
			// of their own): a full bucket and no leases, as the first
			// three's would be once their bucket refilled and their leases
			// aged out.
			again := newCluster(t)
			if err := again.limiters[0].SetLimit(context.Background(), coA, invoicing.Live, tc.lim); err != nil {
				t.Fatal(err)
			}
			again.offer(t, tc.times)
			got, want := float64(again.refused.Load()), float64(v.Proposed.Refused)
			t.Logf("%+v on %d requests (%d refused by %+v): predicted %.0f refused, the three instances refused %.0f (%+.1f %%)",
				tc.lim, len(tc.times), v.Current.Refused, tc.first, want, got, 100*(got-want)/want)
			if math.Abs(got-want) > 0.1*want {
				t.Errorf("refused %.0f, predicted %.0f: not within ±10 %%", got, want)
			}
		})
	}
}

// perSecond is traffic[i]·scale requests in the i-th second, spread evenly
// over it or together at its start.
func perSecond(traffic []int, scale int, together bool) []time.Duration {
	var times []time.Duration
	for s, n := range traffic {
		n *= scale
		for k := range n {
			in := time.Duration((float64(k) + 0.5) / float64(n) * float64(time.Second))
			if together {
				in = 0
			}
			times = append(times, time.Duration(s)*time.Second+in)
		}
	}
	return times
}

// burstsOf is count bursts of n requests within width, every `every`, the
// first 0.37 s in (so that bursts start anywhere in their seconds).
func burstsOf(n int, width, every time.Duration, count int) []time.Duration {
	var times []time.Duration
	for b := range count {
		at := 370*time.Millisecond + time.Duration(b)*every
		for k := range n {
			times = append(times, at+width*time.Duration(k)/time.Duration(n))
		}
	}
	return times
}

// cluster is three gateway instances' limiters and recorders on one Redis.
type cluster struct {
	limiters []*tenants.Limiter
	shapes   []*shape.Store
	adm      *admin.Service
	refused  atomic.Int64
}

func newCluster(t *testing.T) *cluster {
	first, prefix := testenv.Redis(t)
	c := &cluster{}
	for range 3 {
		rdb := redis.NewClient(first.Options())
		t.Cleanup(func() { _ = rdb.Close() })
		c.limiters = append(c.limiters, tenants.New(tenants.Config{Redis: rdb, Prefix: prefix + "tenants:",
			LiveDefault: tenants.Limit{Rate: tenants.MaxRate, Burst: tenants.MaxBurst}, CountOffered: true,
			RedisTimeout: 2 * time.Second, // a busy machine is not an outage: no decision is made alone
			Logger:       quietLog()}))
		c.shapes = append(c.shapes, shape.New(shape.Config{Redis: rdb, Prefix: prefix + "shape:", Logger: quietLog()}))
	}
	c.adm = admin.New(admin.Config{Limiter: c.limiters[0], Shape: c.shapes[0], Logger: quietLog()})
	return c
}

// offer sends company A's requests at times from the next whole second on,
// dealt to the instances in turn, each instance on its own goroutine; then
// each instance's recorder writes what its limiter counted. It returns the
// first second.
func (c *cluster) offer(t *testing.T, times []time.Duration) time.Time {
	t.Helper()
	start := time.Now().Truncate(time.Second).Add(time.Second)
	at := make([][]time.Time, len(c.limiters))
	for j, in := range times {
		i := j % len(c.limiters)
		at[i] = append(at[i], start.Add(in))
	}
	var local atomic.Int64
	var wg sync.WaitGroup
	for i, l := range c.limiters {
		wg.Go(func() {
			for _, when := range at[i] {
				time.Sleep(time.Until(when))
				d, err := l.Allow(context.Background(), coA, invoicing.Live)
				if err != nil {
					t.Error(err)
					return
				}
				if d.Local {
					local.Add(1)
				}
				if !d.Allowed {
					c.refused.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if n := local.Load(); n > 0 {
		t.Fatalf("%d decisions made alone: Redis was too slow to measure the limiter", n)
	}
	for i, s := range c.shapes {
		if err := s.Flush(context.Background(), c.limiters[i]); err != nil {
			t.Fatal(err)
		}
	}
	return start
}
