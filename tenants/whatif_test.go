package tenants

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
)

// The port decides as the script does: the same request times, offered one
// by one to a Limiter on miniredis (whose TIME the test sets) at limits too
// low to lease, where every request is one decision of the script, and to
// gcra.allow.
func TestGCRAPortAgreesWithScript(t *testing.T) {
	t.Parallel()
	rnd := rand.New(rand.NewPCG(1, 2))
	for _, lim := range []Limit{{Rate: 5, Burst: 3}, {Rate: 2, Burst: 1}, {Rate: 0.5, Burst: 2}, {Rate: 7.3, Burst: 3}} {
		t.Run(fmt.Sprintf("%g/s burst %d", lim.Rate, lim.Burst), func(t *testing.T) {
			rdb, mr := testenv.Miniredis(t)
			l := newLimiter(Config{Redis: rdb, LiveDefault: lim, Logger: discard()})
			t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
			g := newGCRA(lim)
			at := time.Duration(0)
			refused := 0
			for i := range 400 {
				// Bursts and pauses: mostly faster than the rate.
				at += time.Duration(rnd.ExpFloat64() / lim.Rate / 3 * float64(time.Second)).Truncate(time.Microsecond)
				mr.SetTime(t0.Add(at))
				d, err := l.Allow(context.Background(), "acme", invoicing.Live)
				if err != nil || d.Leased || d.Local {
					t.Fatalf("request %d: %+v, %v; want one decision of the script", i, d, err)
				}
				if got := g.allow(at.Seconds()); got != d.Allowed {
					t.Fatalf("request %d at +%v: the port says admitted=%v, the script %v", i, at, got, d.Allowed)
				}
				if !d.Allowed {
					refused++
				}
			}
			if refused < 50 || refused > 350 {
				t.Errorf("%d of 400 refused: the traffic does not test both outcomes", refused)
			}
		})
	}
}

// spread is n calls of allow, in a few steps: the same admissions and the
// same TAT after each second, over random traffic and limits, nice ones
// (whose arrivals fall exactly on the limit's intervals) included.
func TestSpreadAgreesWithAllow(t *testing.T) {
	t.Parallel()
	rnd := rand.New(rand.NewPCG(3, 4))
	rates := []float64{1, 2, 10, 20, 50, 100, 1000, 0.5, 3.7, 33.3}
	bursts := []int{1, 2, 3, 4, 10, 40, 100, 1000}
	for c := range 400 {
		lim := Limit{Rate: rates[rnd.IntN(len(rates))], Burst: bursts[rnd.IntN(len(bursts))]}
		if c%2 == 1 {
			lim = Limit{Rate: 0.1 + rnd.Float64()*200, Burst: 1 + rnd.IntN(300)}
		}
		fast, slow := newGCRA(lim), newGCRA(lim)
		peak := int(lim.Rate*4) + 2*lim.Burst + 2
		for s := range 40 {
			n := rnd.IntN(peak)
			if rnd.IntN(4) == 0 {
				n = 0
			}
			// The whole second, or a part of it (a sixteenth's requests
			// packed by the replay of uneven seconds).
			sp := span{from: 0, d: 1 / float64(n)}
			got := 0
			if c%3 == 2 {
				from := rnd.Float64() * 0.9
				sp = span{from: from, d: rnd.Float64() * (1 - from) / float64(n)}
				got = fast.spreadOver(n, sp.from, sp.d*float64(n))
			} else {
				got = fast.spread(n)
			}
			want := 0
			for k := range n {
				if slow.allow(sp.at(k)) {
					want++
				}
			}
			if got != want || math.Abs(fast.tat-slow.tat) > 1e-9 {
				t.Fatalf("%+v, second %d, %d requests: spread admits %d (TAT %.12g), allow %d (TAT %.12g)",
					lim, s, n, got, fast.tat, want, slow.tat)
			}
			fast.shift(1)
			slow.shift(1)
		}
	}
}

func TestWhatIf(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 3, 10, 14, 59, 30, 0, time.UTC)
	repeat := func(n uint32, times int) []uint32 {
		s := make([]uint32, times)
		for i := range s {
			s[i] = n
		}
		return s
	}
	for _, tc := range []struct {
		name    string
		lim     Limit
		offered []uint32
		want    WhatIf
	}{
		{"nothing offered", Limit{20, 40}, make([]uint32, 120), WhatIf{}},
		{"under the rate", Limit{20, 40}, repeat(20, 120), WhatIf{Offered: 2400}},
		{"within the burst", Limit{20, 40}, []uint32{0, 59, 0, 0, 0}, WhatIf{Offered: 59}},
		// 100 requests in a second: the burst and what the rate refills as
		// they come (the 59th at 0.585 s finds its token; the 60th at
		// 0.595 s is 0.005 s early).
		{"one busy second", Limit{20, 40}, []uint32{0, 100, 0}, WhatIf{Offered: 100, Refused: 41, RefusedSeconds: 1, RefusedMinutes: 1,
			WorstMinute: t0.Add(-30 * time.Second), WorstMinuteRefused: 41, WorstMinuteOffered: 100}},
		// Twice the rate for a minute and a half, across three minutes of
		// the clock: burst + rate × time admitted (40 + 20 × 89.975 s from
		// the first request to the last: 1,839), the worst minute the one
		// full of it.
		{"overloaded", Limit{20, 40}, append(repeat(40, 90), repeat(0, 30)...), WhatIf{Offered: 3600, Refused: 1761, RefusedSeconds: 89, RefusedMinutes: 2,
			WorstMinute: t0.Add(30 * time.Second), WorstMinuteRefused: 1200, WorstMinuteOffered: 2400}},
		// A burst of one: one request per interval, the rest refused.
		{"burst of one", Limit{10, 1}, []uint32{30}, WhatIf{Offered: 30, Refused: 20, RefusedSeconds: 1, RefusedMinutes: 1,
			WorstMinute: t0.Add(-30 * time.Second), WorstMinuteRefused: 20, WorstMinuteOffered: 30}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.lim.WhatIf(Traffic{Start: t0, Counts: tc.offered})
			tc.want.Limit = tc.lim
			if got != tc.want {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestSmallestBurst(t *testing.T) {
	t.Parallel()
	busy := []uint32{0, 100, 0, 0}
	for _, tc := range []struct {
		name    string
		rate    float64
		offered []uint32
		share   float64
		burst   int
		ok      bool
	}{
		// At 20/s, 100 requests in a second are admitted from burst 81
		// (u = 17.8 + burst in spread), and all but 10 of them from 71.
		{"none refused", 20, busy, 0, 81, true},
		{"a tenth refused", 20, busy, 0.1, 71, true},
		{"under the rate", 20, []uint32{5, 5, 5}, 0, 1, true},
		{"nothing offered", 20, nil, 0, 1, true},
		{"beyond any burst", MinRate, []uint32{MaxBurst + 10}, 0, 0, false},
		{"at the largest burst", MinRate, []uint32{MaxBurst}, 0, MaxBurst, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			burst, ok := SmallestBurst(tc.rate, Traffic{Counts: tc.offered}, tc.share)
			if burst != tc.burst || ok != tc.ok {
				t.Errorf("SmallestBurst = %d, %v; want %d, %v", burst, ok, tc.burst, tc.ok)
			}
			if ok && burst > 1 {
				total := int64(0)
				for _, n := range tc.offered {
					total += int64(n)
				}
				if r := (Limit{Rate: tc.rate, Burst: burst - 1}).refused(Traffic{Counts: tc.offered}); float64(r) <= tc.share*float64(total) {
					t.Errorf("burst %d also refuses only %d", burst-1, r)
				}
			}
		})
	}
}

// SmallestBurst bisects, which is right only if a larger burst never
// refuses more: checked on random bursty traffic.
func TestRefusalsFallAsTheBurstGrows(t *testing.T) {
	t.Parallel()
	rnd := rand.New(rand.NewPCG(5, 6))
	for range 60 {
		rate := 1 + rnd.Float64()*50
		offered := make([]uint32, 300)
		for i := range offered {
			switch rnd.IntN(10) {
			case 0:
				offered[i] = uint32(rnd.IntN(int(rate * 6)))
			case 1, 2, 3:
				offered[i] = uint32(rnd.IntN(int(rate) + 1))
			}
		}
		prev := int64(math.MaxInt64)
		for b := 1; b <= 400; b++ {
			r := Limit{Rate: rate, Burst: b}.refused(Traffic{Counts: offered})
			if r > prev {
				t.Fatalf("rate %g: burst %d refuses %d, burst %d %d", rate, b, r, b-1, prev)
			}
			prev = r
		}
	}
}

// A day of bursty traffic: one WhatIf and the search of the smallest burst,
// what `gateway limits whatif` computes once the day is read.
func BenchmarkWhatIfDay(b *testing.B) {
	rnd := rand.New(rand.NewPCG(7, 8))
	offered := make([]uint32, 86400)
	for i := range offered {
		switch {
		case i%3600 < 120: // a sync at the top of each hour
			offered[i] = uint32(60 + rnd.IntN(80))
		case rnd.IntN(3) == 0:
			offered[i] = uint32(rnd.IntN(20))
		}
	}
	t0 := time.Date(2026, 3, 10, 0, 0, 0, 0, time.UTC)
	lim := Limit{Rate: 20, Burst: 40}
	for b.Loop() {
		_ = lim.WhatIf(Traffic{Start: t0, Counts: offered})
		if _, ok := SmallestBurst(lim.Rate, Traffic{Start: t0, Counts: offered}, 0.001); !ok {
			b.Fatal("no burst fits")
		}
	}
}
