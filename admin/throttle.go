package admin

import (
	"net/netip"
	"sync"
	"time"
)

// Wrong admin tokens are throttled per source address. A strong token
// cannot be guessed, but an unthrottled listener answered some 26,000
// guesses a second, each unlogged: now each source may present
// FailureBurst wrong tokens, then one a second (FailureRate); beyond, its
// requests are answered 429 without their token being looked at, the right
// one included, until its bucket refills. Each wrong token is logged with
// its source, and so is the start of each throttling. A source is the
// connection's peer (the admin listener is not behind the public
// listener's proxies), an IPv6 one counted by its /64.

// Default bounds of the admin token's failures (Config.TokenFailures).
const (
	FailureBurst = 10
	FailureRate  = 1.0 // per second, after the burst
	maxSources   = 10_000
)

// Limit is a rate per second after a burst.
type Limit struct {
	Rate  float64
	Burst int
}

// failures is the token bucket of wrong tokens of each source; a nil one
// bounds nothing.
type failures struct {
	limit   Limit
	mu      sync.Mutex
	sources map[netip.Addr]*failBucket
}

// failBucket is one source's bucket: tokens left at at, and whether its
// last request was refused (to log the start of a throttling once).
type failBucket struct {
	tokens    float64
	at        time.Time
	throttled bool
}

// newFailures makes the bound of l (Config.TokenFailures).
func newFailures(l Limit) *failures {
	switch {
	case l.Rate < 0:
		return nil
	case l.Rate == 0:
		l = Limit{FailureRate, FailureBurst}
	}
	return &failures{limit: l, sources: map[netip.Addr]*failBucket{}}
}

// refill brings b's tokens to now.
func (b *failBucket) refill(l Limit, now time.Time) {
	if now.After(b.at) {
		b.tokens = min(float64(l.Burst), b.tokens+now.Sub(b.at).Seconds()*l.Rate)
		b.at = now
	}
}

// take holds a token of src's bucket at now for one check of a token; the
// check gives it back when the token is right (done(true)) and spends it
// when it is wrong. Without a token to hold, it says how long until one is
// free, and whether this refusal starts a throttling.
func (f *failures) take(src netip.Addr, now time.Time) (done func(right bool), wait time.Duration, starts bool) {
	if f == nil {
		return func(bool) {}, 0, false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	src = sourceKey(src)
	b := f.sources[src]
	if b == nil {
		if len(f.sources) >= maxSources {
			f.evict(now)
		}
		b = &failBucket{tokens: float64(f.limit.Burst), at: now}
		f.sources[src] = b
	}
	b.refill(f.limit, now)
	if b.tokens < 1 {
		starts, b.throttled = !b.throttled, true
		return nil, time.Duration((1 - b.tokens) / f.limit.Rate * float64(time.Second)), starts
	}
	b.tokens--
	b.throttled = false
	return func(right bool) {
		if right {
			f.mu.Lock()
			b.tokens = min(float64(f.limit.Burst), b.tokens+1)
			f.mu.Unlock()
		}
	}, 0, false
}

// evict forgets a source whose bucket is full (forgetting it changes
// nothing) among a few, else the first of them.
func (f *failures) evict(now time.Time) {
	var first netip.Addr
	seen := 0
	for a, b := range f.sources {
		if seen == 0 {
			first = a
		}
		if b.refill(f.limit, now); b.tokens >= float64(f.limit.Burst) {
			delete(f.sources, a)
			return
		}
		if seen++; seen == 16 {
			break
		}
	}
	delete(f.sources, first)
}

// sourceKey is the bucket of an address: an IPv4 address, or the /64 of an
// IPv6 one (one host commonly has a whole /64).
func sourceKey(a netip.Addr) netip.Addr {
	a = a.Unmap().WithZone("")
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.Addr()
	}
	return a
}
