package tenants

import "math"

// gcra is refreshScript's admission arithmetic (script.go) in Go, for one
// company and mode at one limit: what replays of recorded traffic run
// (whatif.go). It keeps the script's state, the theoretical arrival time
// (TAT), and its rule: a request at t is admitted when the TAT is at most
// t + tolerance - interval (the script's "one token available", with its
// 1e-9 of a token against rounding), and then moves the TAT one interval
// past max(TAT, t). TestGCRAPortAgreesWithScript holds the two to the same
// decisions.
//
// Times are seconds relative to the start of the second being replayed
// (shift moves the origin on), so that they stay small and a float64 keeps
// them far more precisely than the 1e-9 of a token the rule allows.
type gcra struct {
	interval float64 // seconds between two requests at the rate
	slack    float64 // tolerance - interval + 1e-9 interval: admitted while tat <= t + slack
	tat      float64 // relative to the current second's start; never below 0
}

// tokenEpsilon is the script's allowance against rounding, in tokens.
const tokenEpsilon = 1e-9

func newGCRA(l Limit) gcra {
	iv := 1 / l.Rate
	return gcra{interval: iv, slack: iv*float64(l.Burst) - iv + tokenEpsilon*iv}
}

// allow decides one request at t (relative), as the script decides one
// request.
func (g *gcra) allow(t float64) bool {
	if g.tat > t+g.slack {
		return false
	}
	g.tat = max(g.tat, t) + g.interval
	return true
}

// shift moves the origin s seconds later. A TAT in the past is a full
// bucket, whatever how far in the past: it is kept at the origin.
func (g *gcra) shift(s float64) { g.tat = max(0, g.tat-s) }

// spread decides n requests spread evenly over the current second (the k-th
// at (k+0.5)/n) and returns how many are admitted: what n calls of allow
// would decide, in a few steps instead of n. It is exact in the script's
// arithmetic: TestSpreadAgreesWithAllow compares the two.
func (g *gcra) spread(n int) (admitted int) { return g.spreadOver(n, 0, 1) }

// spreadOver is spread over the width seconds from `from` (relative): the
// k-th request at from + (k+0.5)·width/n.
func (g *gcra) spreadOver(n int, from, width float64) (admitted int) {
	if n <= 0 {
		return 0
	}
	s := span{from: from, d: width / float64(n)}
	k0 := g.first(0, n, s)
	if k0 == n {
		return 0 // refused while the TAT stands still
	}
	if g.interval <= s.d {
		// No faster than the rate: each admitted request leaves the TAT
		// within the next one's reach, so all the rest are admitted.
		m := n - k0
		g.tat = max(max(g.tat, s.at(k0))+float64(m)*g.interval, s.at(n-1)+g.interval)
		return m
	}
	if g.slack < g.interval { // a burst of 1: one request per interval
		for k := k0; k < n; k = g.first(k+1, n, s) {
			g.tat = max(g.tat, s.at(k)) + g.interval
			admitted++
		}
		return admitted
	}
	// Faster than the rate with a burst of 2 or more: after the first
	// admission the TAT stays ahead of every arrival (a refusal leaves it
	// more than an interval ahead, an admission moves it one interval on),
	// so the a-th admission after k0 comes at the first arrival t with
	// tat1 + (a-1)·interval <= t + slack: by the last arrival, floor(u)+1
	// of them, u below.
	tat1 := max(g.tat, s.at(k0)) + g.interval
	rest := n - 1 - k0
	last := s.at(n-1) + g.slack
	a := 0
	if u := (last - tat1) / g.interval; u >= 0 {
		a = int(min(math.Floor(u)+1, float64(rest)))
	}
	// The same rule as allow at the edges, against the rounding of u.
	for a > 0 && tat1+float64(a-1)*g.interval > last {
		a--
	}
	for a < rest && tat1+float64(a)*g.interval <= last {
		a++
	}
	g.tat = tat1 + float64(a)*g.interval
	return 1 + a
}

// span is n requests spread evenly from `from`, d apart.
type span struct{ from, d float64 }

// at is the time of the k-th request.
func (s span) at(k int) float64 { return s.from + (float64(k)+0.5)*s.d }

// first is the first k in [from, n) whose request the current TAT admits,
// or n: the TAT stands still while requests are refused.
func (g *gcra) first(from, n int, s span) int {
	x := (g.tat-g.slack-s.from)/s.d - 0.5 // at(k) + slack >= tat from k >= x on
	if x >= float64(n) {
		return n
	}
	k := from
	if x > float64(from) {
		k = int(math.Ceil(x))
	}
	// The same rule as allow, against the rounding of x.
	for k > from && g.tat <= s.at(k-1)+g.slack {
		k--
	}
	for k < n && g.tat > s.at(k)+g.slack {
		k++
	}
	return k
}
