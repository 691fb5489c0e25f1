package tenants

import (
	"math"
	"time"
)

// What a limit would have done: recorded traffic (the requests a company
// offered its limit, per second) replayed through the limiter's own
// arithmetic (gcra.go) at another limit. Two things are modelled, and say
// where a prediction may differ from what the limiter would have decided:
//   - The requests of a second are taken as spread evenly over it. Requests
//     that came in sub-second bursts are refused more than predicted: at
//     most the rate's refill of one second more per second of such a burst.
//   - The bucket is full when the replay starts.
//
// The limiter itself adds the bounds of leasing (within 0.1 s of the rate
// across instances) and of its fallback while Redis is unreachable (each
// instance then admits up to the limit alone).

// WhatIf is what a limit would have refused of recorded traffic.
type WhatIf struct {
	Limit          Limit
	Offered        int64 // requests offered over the window
	Refused        int64
	RefusedSeconds int // seconds in which at least one request was refused
	RefusedMinutes int // minutes (of the clock) in which at least one was
	// WorstMinute is the start of the minute with the most refusals (the
	// earliest of equals); zero when none was refused.
	WorstMinute        time.Time
	WorstMinuteRefused int64
	WorstMinuteOffered int64
}

// Share is the refused share of the offered requests, 0 to 1.
func (w WhatIf) Share() float64 {
	if w.Offered == 0 {
		return 0
	}
	return float64(w.Refused) / float64(w.Offered)
}

// WhatIf replays offered, the requests offered in each second from start
// (offered[i] in the second start+i s), through l, and says what it would
// have refused. l must be valid (Validate).
func (l Limit) WhatIf(start time.Time, offered []uint32) WhatIf {
	w := WhatIf{Limit: l}
	base := start.Unix()
	minute, minRefused, minOffered := int64(math.MinInt64), int64(0), int64(0)
	closeMinute := func() {
		if minRefused > 0 {
			w.RefusedMinutes++
		}
		if minRefused > w.WorstMinuteRefused {
			w.WorstMinute = time.Unix(minute*60, 0).UTC()
			w.WorstMinuteRefused, w.WorstMinuteOffered = minRefused, minOffered
		}
	}
	l.replay(offered, func(i int, n, refused uint32) {
		if m := floorDiv(base+int64(i), 60); m != minute {
			closeMinute()
			minute, minRefused, minOffered = m, 0, 0
		}
		w.Offered += int64(n)
		minOffered += int64(n)
		if refused > 0 {
			w.Refused += int64(refused)
			w.RefusedSeconds++
			minRefused += int64(refused)
		}
	})
	closeMinute()
	return w
}

// replay runs offered through l, second by second, and tells each second
// with requests its offered and refused counts.
func (l Limit) replay(offered []uint32, each func(i int, n, refused uint32)) {
	g := newGCRA(l)
	idle := 0.0 // seconds since the last one replayed
	for i, n := range offered {
		if n == 0 {
			idle++
			continue
		}
		g.shift(idle)
		idle = 1
		each(i, n, n-uint32(g.spread(int(n))))
	}
}

// refused is the total l would have refused of offered.
func (l Limit) refused(offered []uint32) (total int64) {
	l.replay(offered, func(_ int, _, r uint32) { total += int64(r) })
	return total
}

// SmallestBurst is the smallest burst that, at rate, would have refused at
// most share (0 to 1) of offered; ok is false when even MaxBurst would have
// refused more. It bisects, as refusals fall when the burst grows (checked
// on random traffic by TestRefusalsFallAsTheBurstGrows).
func SmallestBurst(rate float64, offered []uint32, share float64) (burst int, ok bool) {
	var total int64
	for _, n := range offered {
		total += int64(n)
	}
	allowed := int64(math.Floor(share * float64(total)))
	fits := func(b int) bool { return Limit{Rate: rate, Burst: b}.refused(offered) <= allowed }
	if !fits(MaxBurst) {
		return 0, false
	}
	lo, hi := 0, MaxBurst // fits(hi); lo does not fit, or is 0
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if fits(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi, true
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}
