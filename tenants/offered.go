package tenants

import (
	"sync"
	"time"

	"github.com/invoicing-ao/gateway/invoicing"
)

// Requests offered. With Config.CountOffered, every decision counts its
// request, admitted or refused, for its company, mode and second (of this
// instance's clock), in the sixteenth of the second it came in, and counts
// a refusal apart, so that the shape of each company's traffic can be
// recorded (TakeOffered gives the counts away, package shape keeps them).
// The sixteenths are what a replay needs of bursts shorter than a second
// (whatif.go); the refusals are what the limit in force really refused.
// The count is made under the state's mutex, which the decision holds
// anyway, on the state it already found: a request pays two increments,
// and once per second a few more words; the states with counts wait in one
// list, which a request enters once per state between two takes. A refusal
// decided by a refresh takes the mutex once more.

// maxOfferedSeconds bounds the seconds a state keeps for TakeOffered: a
// minute or two of traffic if nobody takes them. Past it, counts are
// dropped (Stats.OfferedDropped).
const maxOfferedSeconds = 120

// Slots is how many parts of a second the requests offered are counted in.
const Slots = 16

// offered is a state's counts, guarded by state.mu.
type offered struct {
	cur    secondCount
	queued bool          // in the limiter's list of states with counts
	done   []secondCount // earlier seconds, not taken yet
}

type secondCount struct {
	sec     int64
	n       uint32
	refused uint32
	slots   [Slots]uint16 // saturating
}

// offeredList is the states with counts not taken yet, each once.
type offeredList struct {
	mu     sync.Mutex
	states []*state
	spare  []*state // the previous take's slice, reused
	take   sync.Mutex
}

// countOffered counts one request of st at now, refused or not. Called
// with st.mu held.
func (l *Limiter) countOffered(st *state, now time.Time, refused bool) {
	c := &st.offered
	ns := now.UnixNano()
	sec := floorDiv(ns, int64(time.Second))
	if c.cur.sec != sec {
		if c.cur.n > 0 || c.cur.refused > 0 {
			if len(c.done) < maxOfferedSeconds {
				c.done = append(c.done, c.cur)
			} else {
				l.stats.offeredDropped.Add(uint64(c.cur.n))
			}
		}
		c.cur = secondCount{sec: sec}
	}
	c.cur.n++
	if refused {
		c.cur.refused++
	}
	if s := &c.cur.slots[(ns-sec*int64(time.Second))*Slots/int64(time.Second)]; *s < 1<<16-1 {
		*s++
	}
	l.enqueue(st)
}

// enqueue puts st in the list of states with counts, once. Called with
// st.mu held.
func (l *Limiter) enqueue(st *state) {
	if !st.offered.queued {
		st.offered.queued = true
		q := &l.offered
		q.mu.Lock()
		q.states = append(q.states, st)
		q.mu.Unlock()
	}
}

// countRefused counts a refusal of a request already counted at now, whose
// decision came later (a refresh's). Called with st.mu held.
func (l *Limiter) countRefused(st *state, now time.Time) {
	c := &st.offered
	sec := floorDiv(now.UnixNano(), int64(time.Second))
	defer l.enqueue(st)
	if c.cur.sec == sec {
		c.cur.refused++
		return
	}
	for i := len(c.done) - 1; i >= 0; i-- {
		if c.done[i].sec == sec {
			c.done[i].refused++
			return
		}
	}
	// Its second was taken already: the refusal comes alone, to be added.
	if len(c.done) < maxOfferedSeconds {
		c.done = append(c.done, secondCount{sec: sec, refused: 1})
	}
}

// afterDecision counts d's refusal of a request counted at now, when a
// refresh or the fallback decided it.
func (l *Limiter) afterDecision(st *state, now time.Time, d Decision) {
	if !l.countsOffered || d.Allowed {
		return
	}
	st.mu.Lock()
	l.countRefused(st, now)
	st.mu.Unlock()
}

// TakeOffered gives yield the requests offered since the last call, one
// count per company, mode and second (unix seconds, of this instance's
// clock): the requests offered, those refused, and the requests offered in
// each sixteenth of the second (a slice of Slots, yield's to read until it
// returns). It forgets them. The current second's count so far is given
// too: a later call gives the rest of it, so a second may come in two
// counts, to be added. Nothing is counted without Config.CountOffered.
func (l *Limiter) TakeOffered(yield func(companyID string, m invoicing.Mode, second int64, offered, refused int, slots []uint16)) {
	q := &l.offered
	q.take.Lock()
	defer q.take.Unlock()
	q.mu.Lock()
	states := q.states
	q.states, q.spare = q.spare[:0], nil
	q.mu.Unlock()
	var counts []secondCount
	for _, st := range states {
		st.mu.Lock()
		c := &st.offered
		counts = append(counts[:0], c.done...)
		if c.cur.n > 0 || c.cur.refused > 0 {
			counts = append(counts, c.cur)
		}
		c.done, c.queued = c.done[:0], false
		c.cur = secondCount{sec: c.cur.sec}
		st.mu.Unlock()
		for i := range counts {
			sc := &counts[i]
			yield(st.key.company, st.key.mode, sc.sec, int(sc.n), int(sc.refused), sc.slots[:])
		}
	}
	clear(states)
	q.mu.Lock()
	q.spare = states[:0]
	q.mu.Unlock()
}
