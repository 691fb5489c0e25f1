package tenants

import (
	"sync"
	"time"

	"github.com/invoicing-ao/gateway/invoicing"
)

// Requests offered. With Config.CountOffered, every decision counts its
// request, admitted or refused, for its company, mode and second (of this
// instance's clock), so that the shape of each company's traffic can be
// recorded (TakeOffered gives the counts away, package shape keeps them).
// The count is made under the state's mutex, which the decision holds
// anyway, on the state it already found: a request pays an increment, and
// once per second a few more words; the states with counts wait in one list,
// which a request enters once per state between two takes.

// maxOfferedSeconds bounds the seconds a state keeps for TakeOffered: a
// minute or two of traffic if nobody takes them. Past it, counts are
// dropped (Stats.OfferedDropped).
const maxOfferedSeconds = 120

// offered is a state's counts, guarded by state.mu.
type offered struct {
	sec    int64 // unix second of n
	n      uint32
	queued bool          // in the limiter's list of states with counts
	done   []secondCount // earlier seconds, not taken yet
}

type secondCount struct {
	sec int64
	n   uint32
}

// offeredList is the states with counts not taken yet, each once.
type offeredList struct {
	mu     sync.Mutex
	states []*state
	spare  []*state // the previous take's slice, reused
	take   sync.Mutex
}

// countOffered counts one request of st at now. Called with st.mu held.
func (l *Limiter) countOffered(st *state, now time.Time) {
	c := &st.offered
	if sec := now.Unix(); c.sec != sec {
		if c.n > 0 {
			if len(c.done) < maxOfferedSeconds {
				c.done = append(c.done, secondCount{c.sec, c.n})
			} else {
				l.stats.offeredDropped.Add(uint64(c.n))
			}
		}
		c.sec, c.n = sec, 0
	}
	c.n++
	if !c.queued {
		c.queued = true
		q := &l.offered
		q.mu.Lock()
		q.states = append(q.states, st)
		q.mu.Unlock()
	}
}

// TakeOffered gives yield the requests offered since the last call, one
// count per company, mode and second (unix seconds, of this instance's
// clock), and forgets them. The current second's count so far is given
// too: a later call gives the rest of it, so a second may come in two
// counts, to be added. Nothing is counted without Config.CountOffered.
func (l *Limiter) TakeOffered(yield func(companyID string, m invoicing.Mode, second int64, n int)) {
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
		if c.n > 0 {
			counts = append(counts, secondCount{c.sec, c.n})
		}
		c.done, c.n, c.queued = c.done[:0], 0, false
		st.mu.Unlock()
		for _, sc := range counts {
			yield(st.key.company, st.key.mode, sc.sec, int(sc.n))
		}
	}
	clear(states)
	q.mu.Lock()
	q.spare = states[:0]
	q.mu.Unlock()
}
