package tenants

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// trafficOf records request times (seconds from t0, ascending) as the
// recorder does: per second, and per sixteenth of it.
func trafficOf(t0 time.Time, times []float64) Traffic {
	tr := Traffic{Start: t0, Counts: make([]uint32, int(times[len(times)-1])+1)}
	for _, at := range times {
		i := int(at)
		tr.Counts[i]++
		if len(tr.Uneven) == 0 || tr.Uneven[len(tr.Uneven)-1].Index != i {
			tr.Uneven = append(tr.Uneven, Uneven{Index: i})
		}
		tr.Uneven[len(tr.Uneven)-1].Slots[int((at-float64(i))*Slots)]++
	}
	return tr
}

// exactRefused is what the limit's arithmetic refuses of the requests at
// their own times: the ideal bucket.
func exactRefused(l Limit, times []float64) (refused int64) {
	g := newGCRA(l)
	for _, at := range times {
		if !g.allow(at) {
			refused++
		}
	}
	return refused
}

// bursts are n requests each within width seconds, one every `every`
// seconds (from a random offset, so that bursts straddle seconds and
// sixteenths), over trickle requests per second besides.
func bursts(rnd *rand.Rand, count, n int, width, every float64, trickle int) []float64 {
	var times []float64
	at := rnd.Float64()
	for range count {
		for k := range n {
			times = append(times, at+width*(float64(k)+rnd.Float64())/float64(n))
		}
		at += every * (0.8 + 0.4*rnd.Float64())
	}
	for s := 0; s < int(at); s++ {
		for range trickle {
			times = append(times, float64(s)+rnd.Float64())
		}
	}
	slices.Sort(times)
	return times
}

// A replay of sub-second bursts, from the sixteenths they came in, refuses
// within 10 % of what the limit's arithmetic refuses of the requests at
// their own times (the limiter is within 2 % of it); spread evenly over
// their seconds, the same bursts were refused half as much or less.
func TestReplayOfSubSecondBursts(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 3, 10, 14, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name         string
		n            int
		width, every float64
		trickle      int
		limits       []Limit
	}{
		{"130 within 100 ms", 130, 0.1, 3, 0, []Limit{{50, 100}, {30, 60}, {20, 40}, {40, 110}, {100, 100}}},
		{"130 within 100 ms over trickle", 130, 0.1, 3, 5, []Limit{{50, 100}, {30, 60}, {40, 110}}},
		{"40 within 50 ms every 2 s", 40, 0.05, 2, 0, []Limit{{10, 20}, {20, 20}, {5, 30}, {50, 25}}},
		{"150 within 100 ms every second", 150, 0.1, 1, 0, []Limit{{50, 100}, {100, 120}, {120, 60}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rnd := rand.New(rand.NewPCG(uint64(tc.n), uint64(tc.trickle)))
			times := bursts(rnd, 200, tc.n, tc.width, tc.every, tc.trickle)
			tr := trafficOf(t0, times)
			for _, l := range tc.limits {
				want := exactRefused(l, times)
				got := l.WhatIf(tr).Refused
				even := l.WhatIf(Traffic{Start: t0, Counts: tr.Counts}).Refused
				t.Logf("%g/s burst %d: replayed %d, exact %d (%+.1f %%); spread over the seconds %d", l.Rate, l.Burst, got, want,
					100*(float64(got)/float64(want)-1), even)
				if want < 200 {
					t.Fatalf("%g/s burst %d: %d refused: the traffic does not test the limit", l.Rate, l.Burst, want)
				}
				if math.Abs(float64(got-want)) > 0.1*float64(want) {
					t.Errorf("%g/s burst %d: replayed %d, the ideal bucket %d: more than 10 %% apart", l.Rate, l.Burst, got, want)
				}
			}
		})
	}
}

// A replay over the busy seconds' index is the replay over every second.
func TestIndexedReplaysAlike(t *testing.T) {
	t.Parallel()
	rnd := rand.New(rand.NewPCG(9, 10))
	t0 := time.Date(2026, 3, 10, 14, 0, 0, 0, time.UTC)
	times := bursts(rnd, 40, 60, 0.1, 30, 0)
	tr := trafficOf(t0, times)
	ix := tr.Indexed()
	if ix.Busy == nil {
		t.Fatal("not indexed: the traffic is mostly idle")
	}
	for _, l := range []Limit{{20, 40}, {5, 10}, {1, 1}} {
		a, b := l.WhatIf(tr), l.WhatIf(ix)
		if a != b || a.Refused == 0 {
			t.Errorf("%+v: %+v over every second, %+v over the index", l, a, b)
		}
		ba, oka := SmallestBurst(l.Rate, tr, 0.001)
		bb, okb := SmallestBurst(l.Rate, ix, 0.001)
		if ba != bb || oka != okb {
			t.Errorf("%+v: smallest burst %d, %v; over the index %d, %v", l, ba, oka, bb, okb)
		}
	}
}

// The short bursts are counted, where they are: a burst within a sixteenth
// or across two (even across two seconds), not one of three.
func TestShortBursts(t *testing.T) {
	t.Parallel()
	tr := Traffic{Uneven: []Uneven{
		{Index: 0, Slots: [Slots]uint16{2: 30, 7: 20, 8: 20, 10: 5, 11: 5, 12: 5, 15: 9}},
		{Index: 1, Slots: [Slots]uint16{0: 9, 5: 1}},
	}}
	// 2: one sixteenth; 7-8: two; 10-12: three, not short; 15 and the next
	// second's 0: two; 5 of the second second: a single request.
	if n := tr.ShortBursts(); n != 3 {
		t.Errorf("%d short bursts, want 3", n)
	}
}
