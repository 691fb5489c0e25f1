package admin_test

import (
	"context"
	"math"
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
// its recorder, serve a company's bursty traffic under a limit that admits
// all of it; the what-if is asked for a lower limit; that limit is set, and
// the same traffic is offered to it again: the refusals predicted and the real
// ones agree within ±10 % (docs/performance.md has the figures). Once for a
// limit too low to lease (each request one decision in Redis), once for a
// leased one. And once with each second's requests sent together at its
// start, where the what-if's model (a second's requests spread over it) is
// wrong: more are refused than predicted, at most what the rate refills in
// a second for each second in which requests are refused.
func TestWhatIfAgreesWithTheLimiter(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs 75 s of traffic in real time")
	}
	base := []int{15, 15, 120, 120, 15, 15, 15, 200, 15, 80, 80, 15} // requests in each second
	for _, tc := range []struct {
		name    string
		lim     tenants.Limit
		scale   int
		clumped bool
	}{
		{"exact", tenants.Limit{Rate: 20, Burst: 40}, 1, false},
		{"leased", tenants.Limit{Rate: 200, Burst: 400}, 10, false},
		{"sub-second bursts", tenants.Limit{Rate: 20, Burst: 40}, 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // each on its own Redis prefix
			traffic := make([]int, len(base))
			for i, n := range base {
				traffic[i] = n * tc.scale
			}
			c := newCluster(t)
			c.clumped = tc.clumped
			start := c.offer(t, traffic)
			v, err := c.adm.WhatIf(context.Background(), admin.WhatIfQuery{CompanyID: coA, Mode: "LIVE", Rate: tc.lim.Rate, Burst: tc.lim.Burst,
				Since: start.Add(-time.Second), MaxRefused: admin.DefaultMaxRefused})
			if err != nil {
				t.Fatal(err)
			}
			total := 0
			for _, n := range traffic {
				total += n
			}
			if v.Offered != int64(total) || v.Current.Refused != 0 {
				t.Fatalf("recorded %d requests (want %d), %d refused under the first limit", v.Offered, total, v.Current.Refused)
			}
			// The limit is set on three fresh instances (on a Redis prefix
			// of their own): a full bucket and no leases, as the first
			// three's would be once their bucket refilled and their leases
			// aged out.
			again := newCluster(t)
			again.clumped = tc.clumped
			if err := again.limiters[0].SetLimit(context.Background(), coA, invoicing.Live, tc.lim); err != nil {
				t.Fatal(err)
			}
			again.offer(t, traffic)
			got, want := float64(again.refused.Load()), float64(v.Proposed.Refused)
			t.Logf("%+v on %d requests: predicted %.0f refused, the three instances refused %.0f (%+.1f %%)", tc.lim, total, want, got, 100*(got-want)/want)
			switch bound := want + tc.lim.Rate*float64(v.Proposed.RefusedSeconds); {
			case tc.clumped && (got < want || got > bound):
				t.Errorf("refused %.0f, predicted %.0f: want from the prediction to %.0f", got, want, bound)
			case !tc.clumped && math.Abs(got-want) > 0.1*want:
				t.Errorf("refused %.0f, predicted %.0f: not within ±10 %%", got, want)
			}
		})
	}
}

// cluster is three gateway instances' limiters and recorders on one Redis.
type cluster struct {
	limiters []*tenants.Limiter
	shapes   []*shape.Store
	adm      *admin.Service
	refused  atomic.Int64
	clumped  bool // each second's requests sent together at its start
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

// offer sends traffic[i] requests of company A in the i-th second from the
// next whole second on, spread evenly over each second (or together at its
// start) and dealt to the instances in turn, each instance on its own
// goroutine; then each instance's recorder writes what its limiter counted.
// It returns the first second.
func (c *cluster) offer(t *testing.T, traffic []int) time.Time {
	t.Helper()
	start := time.Now().Truncate(time.Second).Add(time.Second)
	at := make([][]time.Time, len(c.limiters))
	j := 0
	for s, n := range traffic {
		for k := range n {
			i := j % len(c.limiters)
			in := time.Duration((float64(k) + 0.5) / float64(n) * float64(time.Second))
			if c.clumped {
				in = 0
			}
			at[i] = append(at[i], start.Add(time.Duration(s)*time.Second+in))
			j++
		}
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
