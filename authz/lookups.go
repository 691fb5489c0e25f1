package authz

import (
	"fmt"
	"net/netip"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// The bound of lookups of unknown keys. A well-formed secret that this
// instance has never verified costs a Redis lookup; repeats of one secret
// are answered by the negative cache, but secrets are free to vary, so an
// unbounded caller could make Redis (shared by every instance and every key)
// answer as fast as it can send. Lookups of digests this instance does not
// know are therefore admitted by two token buckets, one per source (an
// address, or the /64 of an IPv6 one) and one for the instance, and only a
// lookup that finds nothing usable (no record, revoked, the other mode)
// spends a token. Over either bound the secret is refused with
// ErrKeyLookupsLimited and no lookup.
//
// A key this instance has verified (cached, fresh or not) is never subject
// to the bound, nor is a key found by a lookup, which then is cached: only a
// key's first use on an instance, while its source or the instance is over
// the bound, is refused (429, retryable; never 401).
//
// A lookup holds its place in both buckets while it runs, so that many
// concurrent lookups cannot all pass on one remaining token: the lookups
// that find nothing never exceed burst + rate × elapsed time, per source
// and per instance.

// Source is where a request comes from. Verify asks it only before a
// lookup of a key this instance does not know: a known key never pays for
// working out its caller's address.
type Source interface {
	// Addr is the client's address; the zero Addr when it cannot be known
	// (all such callers share one source's bound).
	Addr() netip.Addr
}

// Addr is a Source of a known address.
type Addr netip.Addr

// Addr returns a as a netip.Addr.
func (a Addr) Addr() netip.Addr { return netip.Addr(a) }

// LookupLimit is a rate per second and a burst. A negative Rate means no
// bound.
type LookupLimit struct {
	Rate  float64
	Burst int
}

// refusal is why a secret was refused without a lookup.
type refusal uint8

const (
	refusedMalformed refusal = iota
	refusedChecksum
	refusedLegacyForm
	refusedSource
	refusedInstance
	refusals // how many
)

var refusalNames = [refusals]string{"malformed", "checksum", "legacy_form", "source_limit", "instance_limit"}

// limitedError is ErrKeyLookupsLimited with when to retry.
type limitedError struct {
	wait  time.Duration
	which refusal
}

func (e *limitedError) Error() string {
	return fmt.Sprintf("%v (%s; retry in %v)", ErrKeyLookupsLimited, refusalNames[e.which], e.wait.Round(time.Millisecond))
}
func (e *limitedError) Unwrap() error { return ErrKeyLookupsLimited }

// RetryAfter is how long until the bound admits a lookup again (at the
// rate alone: lookups in flight may free their places sooner).
func (e *limitedError) RetryAfter() time.Duration { return e.wait }

// bucket is a token bucket of lookups that find nothing, with the lookups in
// flight holding a token each until they end.
type bucket struct {
	mu       sync.Mutex
	lim      *rate.Limiter
	inflight int
}

func newBucket(l LookupLimit) *bucket {
	return &bucket{lim: rate.NewLimiter(rate.Limit(l.Rate), l.Burst)}
}

// take holds a token for a lookup at now, or says how long until one is
// free.
func (b *bucket) take(now time.Time) (wait time.Duration, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	free := b.lim.TokensAt(now) - float64(b.inflight)
	if free >= 1 {
		b.inflight++
		return 0, true
	}
	return time.Duration((1 - free) / float64(b.lim.Limit()) * float64(time.Second)), false
}

// release ends a lookup; one that found nothing spends its token. The token
// is there: take held it.
func (b *bucket) release(now time.Time, spend bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.inflight--
	if spend {
		b.lim.AllowN(now, 1)
	}
}

// idle reports whether b is as a new bucket would be: full, nothing in
// flight. Forgetting it changes nothing.
func (b *bucket) idle(now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.inflight == 0 && b.lim.TokensAt(now) >= float64(b.lim.Burst())
}

// lookupLimit is the bound: nil buckets mean no bound of that kind.
type lookupLimit struct {
	perSource  LookupLimit
	instance   *bucket
	maxSources int

	mu      sync.Mutex
	sources map[netip.Addr]*bucket
}

func newLookupLimit(perSource, instance LookupLimit, maxSources int) *lookupLimit {
	l := &lookupLimit{perSource: perSource, maxSources: maxSources, sources: map[netip.Addr]*bucket{}}
	if instance.Rate >= 0 {
		l.instance = newBucket(instance)
	}
	return l
}

// sourceKey is the bucket of an address: an IPv4 address, or the /64 of an
// IPv6 one, since one host is commonly given a whole /64 and would
// otherwise have 2^64 buckets.
func sourceKey(a netip.Addr) netip.Addr {
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.Addr()
	}
	return a
}

// source returns the bucket of address a, making it (and forgetting
// another when there are maxSources) if need be.
func (l *lookupLimit) source(a netip.Addr, now time.Time) *bucket {
	if l.perSource.Rate < 0 {
		return nil
	}
	a = sourceKey(a)
	l.mu.Lock()
	defer l.mu.Unlock()
	if b, ok := l.sources[a]; ok {
		return b
	}
	if len(l.sources) >= l.maxSources {
		l.evict(now)
	}
	b := newBucket(l.perSource)
	l.sources[a] = b
	return b
}

// evict forgets one source: an idle one among a random sample if there is
// one, else the first sampled. Forgetting a busy source restores its burst;
// the instance's bound holds all the same.
func (l *lookupLimit) evict(now time.Time) {
	var first netip.Addr
	seen := 0
	for a, b := range l.sources {
		if seen == 0 {
			first = a
		}
		if b.idle(now) {
			delete(l.sources, a)
			return
		}
		if seen++; seen == 16 {
			break
		}
	}
	delete(l.sources, first)
}

// ticket is a lookup admitted by the bound.
type ticket struct{ source, instance *bucket }

// admit admits a lookup of an unknown digest from src at now, or returns
// the *limitedError saying which bound refused it.
func (l *lookupLimit) admit(src Source, now time.Time) (ticket, *limitedError) {
	var a netip.Addr
	if src != nil {
		a = src.Addr()
	}
	t := ticket{source: l.source(a, now), instance: l.instance}
	if t.source != nil {
		if wait, ok := t.source.take(now); !ok {
			return ticket{}, &limitedError{wait: wait, which: refusedSource}
		}
	}
	if t.instance != nil {
		if wait, ok := t.instance.take(now); !ok {
			if t.source != nil {
				t.source.release(now, false)
			}
			return ticket{}, &limitedError{wait: wait, which: refusedInstance}
		}
	}
	return t, nil
}

// done ends the lookup; spend is true when it found nothing usable (a
// lookup that failed found nothing out).
func (t ticket) done(now time.Time, spend bool) {
	for _, b := range [...]*bucket{t.source, t.instance} {
		if b != nil {
			b.release(now, spend)
		}
	}
}

// sourceCount is how many sources are tracked (for tests).
func (l *lookupLimit) sourceCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.sources)
}
