package tenants

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/invoicing-ao/gateway/invoicing"
	"golang.org/x/time/rate"
)

// Bounds of the per-instance memory of companies.
const (
	stateIdle       = 15 * time.Minute // an entry unused this long is forgotten
	stateSweepEvery = time.Minute
	stateMax        = 200_000 // entries (company × mode); past it arbitrary ones are dropped
)

// states remembers, per company and mode, the lease (lease.go), the last
// limit Redis applied and the in-process limiter used in fallback. It stays bounded: idle entries are
// swept, and past max arbitrary ones are dropped. Forgetting a company costs
// at most one fresh local burst for it, or the default limit in an outage.
type states struct {
	m         sync.Map // stateKey → *state
	n         atomic.Int64
	nextSweep atomic.Int64 // unix ns
	sweeping  atomic.Bool

	idle, sweepEvery time.Duration
	max              int64
}

func newStates() *states {
	return &states{idle: stateIdle, sweepEvery: stateSweepEvery, max: stateMax}
}

type stateKey struct {
	company string
	mode    invoicing.Mode
}

type state struct {
	key   stateKey
	limit atomic.Pointer[Limit] // last limit Redis applied; nil until the first
	seen  atomic.Int64          // unix ns of the last use, to the second

	mu      sync.Mutex
	lease   lease
	local   *rate.Limiter // created on the first local decision
	offered offered       // requests counted for TakeOffered (offered.go)
}

func (s *states) state(company string, m invoicing.Mode, now time.Time) *state {
	ns := now.UnixNano()
	k := stateKey{company, m}
	v, ok := s.m.Load(k)
	if !ok {
		st := &state{key: k}
		st.seen.Store(ns)
		if v, ok = s.m.LoadOrStore(k, st); !ok {
			s.n.Add(1)
		}
	}
	st := v.(*state)
	// Writing the shared time only once a second keeps the hot path free of
	// cache-line contention between cores.
	if ns-st.seen.Load() > int64(time.Second) {
		st.seen.Store(ns)
	}
	if (ns >= s.nextSweep.Load() || s.n.Load() > s.max) && s.sweeping.CompareAndSwap(false, true) {
		s.nextSweep.Store(ns + int64(s.sweepEvery))
		go func() {
			defer s.sweeping.Store(false)
			s.sweep(now)
		}()
	}
	return st
}

// sweep forgets entries idle since before now-idle, then, if still over max,
// arbitrary ones down to 90% of max. A forgotten entry's unspent tokens are
// dropped (an idle one's lease expired long ago).
func (s *states) sweep(now time.Time) {
	cutoff := now.Add(-s.idle).UnixNano()
	s.m.Range(func(k, v any) bool {
		if v.(*state).seen.Load() < cutoff && s.m.CompareAndDelete(k, v) {
			s.n.Add(-1)
		}
		return true
	})
	target := s.max * 9 / 10
	s.m.Range(func(k, v any) bool {
		if s.n.Load() <= target {
			return false
		}
		if s.m.CompareAndDelete(k, v) {
			s.n.Add(-1)
		}
		return true
	})
}

// remember records the limit Redis applied, for the fallback.
func (st *state) remember(lim Limit) {
	if p := st.limit.Load(); p == nil || *p != lim {
		st.limit.Store(&lim)
	}
}

// decideLocal admits from this instance's own bucket for the company.
func (st *state) decideLocal(now time.Time, lim Limit) Decision {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.local == nil {
		st.local = rate.NewLimiter(rate.Limit(lim.Rate), lim.Burst)
	} else {
		if st.local.Limit() != rate.Limit(lim.Rate) {
			st.local.SetLimitAt(now, rate.Limit(lim.Rate))
		}
		if st.local.Burst() != lim.Burst {
			st.local.SetBurstAt(now, lim.Burst)
		}
	}
	d := Decision{Limit: lim, Local: true}
	tokens := st.local.TokensAt(now)
	if tokens >= 1 && st.local.AllowN(now, 1) {
		d.Allowed = true
		tokens--
	} else {
		d.RetryAfter = seconds((1 - tokens) / lim.Rate)
	}
	d.Remaining = max(0, int(tokens))
	d.Reset = seconds((float64(lim.Burst) - tokens) / lim.Rate)
	return d
}

func seconds(s float64) time.Duration {
	if s <= 0 {
		return 0
	}
	return time.Duration(s * float64(time.Second))
}
