package tenants

import (
	"time"
)

// Leases. Each instance keeps, per company and mode, the tokens it took from
// the company's shared bucket in Redis and spends them on the company's next
// requests without asking Redis. When they run out (or expire) the next
// request refreshes the lease: one script call gives back what is left of
// the old one and takes a new one (script.go). Requests that arrive while a
// refresh is in flight wait for it and are served from what it brings; only
// one refresh per company and mode is in flight on an instance.
//
// What keeps the global limit within bounds:
//   - A lease is at most what the company's rate refills in leaseSpan (0.1 s)
//     or half its burst, divided among the instances serving it (the script
//     counts them), and never more than this instance's recent demand
//     doubled (it starts at one token and doubles while leases run out
//     before they expire). Together, the instances hold at most 0.1 s of the
//     rate: that is the most the global count can be ahead of or behind the
//     bucket's.
//   - A lease is spent within the lease TTL (500 ms by default) of its grant,
//     then given back at the next refresh (dropped if that comes more than a
//     second after the grant), so a limit changed in Redis applies on every
//     instance within the TTL.
//   - A limit whose lease would be a single token (a low rate or burst, or
//     many instances) is not leased: each request is one decision in Redis,
//     exact, as separate calls would make them.
//   - When the bucket could not give the whole lease (the company is at its
//     limit), the instance refuses the company's requests locally, once the
//     tokens it got are spent, for the time the bucket needs to refill half
//     its burst or one lease span, whichever is shorter, instead of asking
//     Redis for every one of them. The bucket cannot overflow meanwhile, so no
//     token is lost; the instances that come back take what accrued.

// returnWindow: unspent tokens are given back at the next refresh if that
// comes within this time of their grant, else dropped (the bucket refilled
// long since, or the company is quiet).
const returnWindow = time.Second

// waiter is one request waiting for a refresh of its company's lease. Its
// fields are written under the state's mutex before done is closed.
type waiter struct {
	d      Decision
	err    error
	served bool
	done   chan struct{}
}

// lease is a state's lease, guarded by state.mu.
type lease struct {
	tokens  int   // unspent tokens of the current lease
	granted int   // tokens the current lease brought
	next    int   // tokens to ask for at the next refresh (the demand seen)
	taken   int64 // unix ns (local clock) of the current lease's refresh
	expires int64 // unix ns after which its tokens are not spent

	// What Redis last said of the company's bucket (for the RateLimit fields).
	lim       Limit
	lmax      int // the most this instance may lease; below 2: not leased
	remaining int // tokens left in the bucket after the grant
	reset     time.Duration

	deniedUntil int64 // unix ns: the bucket was found short; refuse locally until then

	waiters  []*waiter
	inflight bool // a refresh is queued or in flight
	sent     int  // waiters that the in-flight refresh asked tokens for
	want     int  // tokens it asked for
	give     int  // tokens it gave back
}

// takeLeased decides a request without Redis when the lease allows: a token
// is left and fresh, or the bucket was found short moments ago. ok is false
// when the request must wait for a refresh. Called with st.mu held.
func (ls *lease) takeLeased(now int64) (d Decision, ok bool) {
	if ls.inflight {
		return Decision{}, false // earlier requests are waiting: keep their order
	}
	if ls.tokens > 0 && now < ls.expires {
		ls.tokens--
		return ls.decision(true, now), true
	}
	if ls.tokens == 0 && now < ls.deniedUntil {
		return ls.decision(false, now), true
	}
	return Decision{}, false
}

// decision is the answer to one request from what the lease knows: the
// bucket as Redis last reported it plus this instance's unspent tokens.
func (ls *lease) decision(allowed bool, now int64) Decision {
	since := time.Duration(now - ls.taken)
	d := Decision{
		Allowed:   allowed,
		Limit:     ls.lim,
		Remaining: ls.remaining + ls.tokens,
		Reset:     max(0, ls.reset-time.Duration(ls.tokens)*ls.lim.interval()-since),
		Leased:    true,
	}
	if !allowed {
		d.Remaining = 0
		d.RetryAfter = time.Duration(ls.deniedUntil - now)
	}
	return d
}

// join queues a request for the next refresh and reports whether the caller
// must schedule one (none is queued or in flight). Called with st.mu held.
func (ls *lease) join() (w *waiter, schedule bool) {
	w = &waiter{done: make(chan struct{})}
	ls.waiters = append(ls.waiters, w)
	if ls.inflight {
		return w, false
	}
	ls.inflight = true
	return w, true
}

// leave takes a waiter that gave up out of the queue, unless it was served
// meanwhile. Called with st.mu held.
func (ls *lease) leave(w *waiter) (served bool) {
	if w.served {
		return true
	}
	for i, x := range ls.waiters {
		if x == w {
			ls.waiters = append(ls.waiters[:i], ls.waiters[i+1:]...)
			if i < ls.sent {
				ls.sent--
			}
			break
		}
	}
	return false
}

// prepare fixes what the refresh about to be sent asks for and gives back,
// and adapts the lease to the demand the last one saw. It returns the tokens
// dropped (too old to give back). Called with st.mu held.
func (ls *lease) prepare(now int64) (dropped int) {
	spent := ls.granted - ls.tokens
	switch {
	case ls.granted == 0: // the first refresh, or the bucket gave nothing
	case ls.tokens == 0 && now < ls.expires: // ran out early: demand outruns the lease
		ls.next = min(2*max(ls.next, spent), maxLease)
	default: // expired: twice its lifetime's demand, so that the next one
		// lasts its TTL (one refresh per TTL) unless the demand doubles
		ls.next = max(1, 2*spent)
	}
	ls.give = 0
	if ls.tokens > 0 {
		if now-ls.taken < int64(returnWindow) {
			ls.give = ls.tokens
		} else {
			dropped = ls.tokens
		}
		ls.tokens = 0
	}
	// Ask for a lease even where the last refresh said the limit is not
	// leased: the script caps it by the bound of the moment.
	ls.sent = len(ls.waiters)
	ls.want = max(ls.sent, ls.next)
	return dropped
}

// outcome counts what one refresh decided, for Stats.
type outcome struct {
	admitted, rejected, leased, returned int
}

// complete applies a refresh's grant (sent at the local time now, with the
// lease TTL ttl): the waiters it asked for are admitted while tokens last and
// refused after; later arrivals are served from what is left, or refused if
// the bucket was short, or wait for another refresh (again). Called with
// st.mu held; it closes the served waiters' done.
func (ls *lease) complete(g grant, now int64, ttl time.Duration) (o outcome, again bool) {
	o.returned = ls.give
	ls.lim, ls.lmax = g.limit, g.lmax
	ls.tokens, ls.granted = g.tokens, g.tokens
	ls.taken, ls.expires = now, now+int64(ttl)
	ls.remaining, ls.reset = g.remaining, g.reset
	ls.deniedUntil = 0
	if g.lmax > 1 && g.tokens < max(ls.sent, min(ls.want, g.lmax)) { // as the script capped it
		ls.deniedUntil = now + int64(denyWait(g, ttl))
	}
	served := 0
	for i, w := range ls.waiters {
		switch {
		case ls.tokens > 0:
			ls.tokens--
			w.d = Decision{Allowed: true, Limit: g.limit, Remaining: g.remaining + ls.tokens,
				Reset: max(0, g.reset-time.Duration(ls.tokens)*g.limit.interval())}
			o.admitted++
		case i < ls.sent || ls.deniedUntil > now:
			w.d = Decision{Limit: g.limit, RetryAfter: max(g.next, time.Duration(ls.deniedUntil-now)), Reset: g.reset}
			o.rejected++
		default:
			continue
		}
		w.served = true
		close(w.done)
		served++
	}
	ls.waiters = keepUnserved(ls.waiters)
	o.leased = ls.tokens
	ls.sent = 0
	ls.inflight = len(ls.waiters) > 0
	return o, ls.inflight
}

// fail answers every waiter with the refresh's error (the callers then decide
// locally) and forgets what the refresh gave back. Called with st.mu held.
func (ls *lease) fail(err error) (dropped int) {
	for _, w := range ls.waiters {
		w.err, w.served = err, true
		close(w.done)
	}
	clear(ls.waiters)
	ls.waiters = ls.waiters[:0]
	ls.sent, ls.inflight = 0, false
	dropped, ls.give = ls.give, 0
	return dropped
}

// keepUnserved moves the waiters not yet served to the front, in order.
func keepUnserved(ws []*waiter) []*waiter {
	n := 0
	for _, w := range ws {
		if !w.served {
			ws[n] = w
			n++
		}
	}
	clear(ws[n:])
	return ws[:n]
}

// denyWait is how long an instance refuses a company locally after the
// bucket could not give it the lease it asked for: the time the bucket takes
// to refill half its burst or one lease span, whichever is shorter (so it
// cannot overflow meanwhile, and no token is lost), at least until its next
// token, and never past the lease TTL.
func denyWait(g grant, ttl time.Duration) time.Duration {
	half := time.Duration(float64(g.limit.Burst) / 2 / g.limit.Rate * float64(time.Second))
	return min(max(g.next, min(leaseSpan, half)), ttl)
}
