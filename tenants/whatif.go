package tenants

import (
	"math"
	"time"
)

// What a limit would have done: recorded traffic (the requests a company
// offered its limit, per second) replayed through the limiter's own
// arithmetic (gcra.go) at another limit. Within a second, the requests
// are placed by the sixteenths they came in (Traffic.Uneven), where the
// recording kept them: the requests of a sixteenth are packed as densely as
// its run of busy sixteenths' busiest (a burst of even density is then
// placed where it came, wherever it starts and however long it lasts, over
// three sixteenths or more). Seconds whose requests came evenly are spread
// evenly over the second. Where a prediction may still differ from what the
// limiter would have decided:
//   - A burst within one or two sixteenths is taken as half as long as it
//     may have lasted (placement.of): up to what the rate refills in 62.5
//     ms more or fewer refusals per burst (Traffic.ShortBursts counts them).
//   - The bucket is full when the replay starts.
//
// The limiter itself adds the bounds of leasing (within 0.1 s of the rate
// across instances) and of its fallback while Redis is unreachable (each
// instance then admits up to the limit alone).

// Traffic is recorded traffic: the requests offered in each second from
// Start (Counts[i] in the second Start+i s), admitted or refused.
type Traffic struct {
	Start  time.Time
	Counts []uint32
	// Uneven are the seconds whose requests did not come evenly within
	// them, by Index ascending: the requests in each sixteenth.
	Uneven []Uneven
	// Refused are the seconds in which the limit in force refused
	// requests, by Index ascending.
	Refused []Refused
	// Busy are the indexes of the seconds with requests, ascending, for the
	// many replays of a search to skip the idle ones (a mostly idle month:
	// 2.6 million seconds); nil: every second of Counts is read.
	Busy []int32
}

// Indexed is tr with its Busy seconds listed, where fewer than half are
// busy and they are not listed yet.
func (tr Traffic) Indexed() Traffic {
	if tr.Busy != nil {
		return tr
	}
	n := 0
	for _, c := range tr.Counts {
		if c > 0 {
			n++
		}
	}
	if 2*n >= len(tr.Counts) {
		return tr
	}
	tr.Busy = make([]int32, 0, n)
	for i, c := range tr.Counts {
		if c > 0 {
			tr.Busy = append(tr.Busy, int32(i))
		}
	}
	return tr
}

// Uneven is how the requests of second Index came within it: Slots[k] in
// its k-th sixteenth. Their sum is the second's count.
type Uneven struct {
	Index int
	Slots [Slots]uint16
}

// Refused is how many requests the limit in force refused in second Index.
type Refused struct {
	Index int
	N     uint32
}

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

// tally sums the refusals of a window second by second, minute by minute.
type tally struct {
	w                            WhatIf
	base, minute                 int64
	minuteRefused, minuteOffered int64
}

func newTally(l Limit, start time.Time) *tally {
	return &tally{w: WhatIf{Limit: l}, base: start.Unix(), minute: math.MinInt64}
}

func (t *tally) closeMinute() {
	if t.minuteRefused > 0 {
		t.w.RefusedMinutes++
	}
	if t.minuteRefused > t.w.WorstMinuteRefused {
		t.w.WorstMinute = time.Unix(t.minute*60, 0).UTC()
		t.w.WorstMinuteRefused, t.w.WorstMinuteOffered = t.minuteRefused, t.minuteOffered
	}
}

// second counts second i's n requests offered, refused of them.
func (t *tally) second(i int, n, refused uint32) {
	if m := floorDiv(t.base+int64(i), 60); m != t.minute {
		t.closeMinute()
		t.minute, t.minuteRefused, t.minuteOffered = m, 0, 0
	}
	t.w.Offered += int64(n)
	t.minuteOffered += int64(n)
	if refused > 0 {
		t.w.Refused += int64(refused)
		t.w.RefusedSeconds++
		t.minuteRefused += int64(refused)
	}
}

func (t *tally) done() WhatIf {
	t.closeMinute()
	return t.w
}

// WhatIf replays tr through l and says what it would have refused. l must
// be valid (Validate).
func (l Limit) WhatIf(tr Traffic) WhatIf {
	t := newTally(l, tr.Start)
	l.replay(tr, t.second)
	return t.done()
}

// Recorded is what the limit in force refused of tr, as recorded
// (tr.Refused), summed as WhatIf sums a replay's; l names the limit.
func Recorded(l Limit, tr Traffic) WhatIf {
	t := newTally(l, tr.Start)
	r := tr.Refused
	tr.eachBusy(func(i int, n uint32) {
		var refused uint32
		for len(r) > 0 && r[0].Index < i {
			r = r[1:] // out of order or out of the window: not counted
		}
		if len(r) > 0 && r[0].Index == i {
			refused = min(r[0].N, n)
		}
		t.second(i, n, refused)
	})
	return t.done()
}

// replay runs tr through l, second by second, and tells each second with
// requests its offered and refused counts.
func (l Limit) replay(tr Traffic, each func(i int, n, refused uint32)) {
	g := newGCRA(l)
	u := 0 // the next of tr.Uneven
	var place placement
	last := -1 // the last second replayed
	tr.eachBusy(func(i int, n uint32) {
		if last >= 0 {
			g.shift(float64(i - last))
		}
		last = i
		for u < len(tr.Uneven) && tr.Uneven[u].Index < i {
			u++
		}
		admitted := 0
		if u < len(tr.Uneven) && tr.Uneven[u].Index == i && tr.Uneven[u].sum() == n {
			place.of(tr.Uneven, u)
			for k, c := range tr.Uneven[u].Slots {
				if c > 0 {
					admitted += g.spreadOver(int(c), place.from[k], place.width[k])
				}
			}
		} else {
			admitted = g.spread(int(n))
		}
		each(i, n, n-uint32(admitted))
	})
}

// eachBusy calls f for each second of tr with requests, in order.
func (tr Traffic) eachBusy(f func(i int, n uint32)) {
	if tr.Busy != nil {
		for _, i := range tr.Busy {
			f(int(i), tr.Counts[i])
		}
		return
	}
	for i, n := range tr.Counts {
		if n > 0 {
			f(i, n)
		}
	}
}

func (u *Uneven) sum() (n uint32) {
	for _, c := range u.Slots {
		n += uint32(c)
	}
	return n
}

// placement is where the requests of each sixteenth of an uneven second
// are placed: from from[k] for width[k] seconds, from the second's start.
type placement struct {
	from, width [Slots]float64
}

// slotSeconds is a sixteenth of a second.
const slotSeconds = 1.0 / Slots

// of places the sixteenths of us[u]. A run of busy sixteenths, which may
// go on in the seconds before and after, is taken as one burst: each
// sixteenth's requests packed as densely as the run's busiest sixteenth's
// (a burst of even density fills its inner sixteenths), against the
// run's inside at its edges, centred within it. A run of one or two has no
// inner sixteenth to say its density: it is taken as twice as dense, half
// as long as it may have lasted.
func (p *placement) of(us []Uneven, u int) {
	for k := 0; k < Slots; {
		if us[u].Slots[k] == 0 {
			k++
			continue
		}
		// The run through k: back into the seconds before, on into those after.
		peak, alone := uint16(0), true
		bu, bk := u, k
		for {
			peak = max(peak, us[bu].Slots[bk])
			pu, pk, ok := prevSlot(us, bu, bk)
			if !ok || us[pu].Slots[pk] == 0 {
				break
			}
			bu, bk, alone = pu, pk, false
		}
		end := k // the run's last sixteenth within this second
		eu, ek := u, k
		for {
			peak = max(peak, us[eu].Slots[ek])
			nu, nk, ok := nextSlot(us, eu, ek)
			if !ok || us[nu].Slots[nk] == 0 {
				break
			}
			eu, ek, alone = nu, nk, false
			if nu == u {
				end = nk
			}
		}
		// A run of one or two sixteenths has no inner one that a burst
		// filled: it lasted from nothing to all of them; half is the middle.
		density := float64(peak) / slotSeconds
		if short := alone || (bu == eu && bk+1 == ek) || (bu+1 == eu && bk == Slots-1 && ek == 0); short {
			density *= 2
		}
		for j := k; j <= end; j++ {
			start := float64(j) * slotSeconds
			w := float64(us[u].Slots[j]) / density
			if alone {
				p.from[j], p.width[j] = start+(slotSeconds-w)/2, w
				continue
			}
			first := j == k && bu == u && bk == k
			last := j == end && eu == u && ek == end
			switch {
			case first:
				p.from[j] = start + slotSeconds - w
			case last:
				p.from[j] = start
			default:
				p.from[j] = start + (slotSeconds-w)/2
			}
			p.width[j] = w
		}
		k = end + 1
	}
}

// ShortBursts counts the runs of busy sixteenths one or two long (bursts
// shorter than 125 ms, of 2 requests or more), where the replay is
// approximate: how long such a burst lasted, within its sixteenths, is not
// recorded.
func (tr Traffic) ShortBursts() (n int) {
	us := tr.Uneven
	for u := range us {
		for k := 0; k < Slots; k++ {
			if us[u].Slots[k] == 0 {
				continue
			}
			if pu, pk, ok := prevSlot(us, u, k); ok && us[pu].Slots[pk] > 0 {
				continue // not the run's first
			}
			length, requests := 0, 0
			for cu, ck, ok := u, k, true; ok && us[cu].Slots[ck] > 0 && length <= 2; cu, ck, ok = nextSlot(us, cu, ck) {
				length++
				requests += int(us[cu].Slots[ck])
			}
			if length <= 2 && requests >= 2 {
				n++
			}
		}
	}
	return n
}

// prevSlot and nextSlot step through the sixteenths of consecutive uneven
// seconds.
func prevSlot(us []Uneven, u, k int) (int, int, bool) {
	if k > 0 {
		return u, k - 1, true
	}
	if u > 0 && us[u-1].Index == us[u].Index-1 {
		return u - 1, Slots - 1, true
	}
	return 0, 0, false
}

func nextSlot(us []Uneven, u, k int) (int, int, bool) {
	if k < Slots-1 {
		return u, k + 1, true
	}
	if u+1 < len(us) && us[u+1].Index == us[u].Index+1 {
		return u + 1, 0, true
	}
	return 0, 0, false
}

// refused is the total l would have refused of tr.
func (l Limit) refused(tr Traffic) (total int64) {
	l.replay(tr, func(_ int, _, r uint32) { total += int64(r) })
	return total
}

// SmallestBurst is the smallest burst that, at rate, would have refused at
// most share (0 to 1) of tr; ok is false when even MaxBurst would have
// refused more. It bisects, as refusals fall when the burst grows (checked
// on random traffic by TestRefusalsFallAsTheBurstGrows).
func SmallestBurst(rate float64, tr Traffic, share float64) (burst int, ok bool) {
	var total int64
	for _, n := range tr.Counts {
		total += int64(n)
	}
	allowed := int64(math.Floor(share * float64(total)))
	fits := func(b int) bool { return Limit{Rate: rate, Burst: b}.refused(tr) <= allowed }
	top := MaxBurst
	if total < MaxBurst { // a burst of all the requests refuses none: fewer replays
		top = max(1, int(total))
	} else if !fits(MaxBurst) {
		return 0, false
	}
	lo, hi := 0, top // fits(hi); lo does not fit, or is 0
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
