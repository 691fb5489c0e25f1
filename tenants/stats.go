package tenants

import (
	"crypto/rand"
	"encoding/hex"
	"sync/atomic"
)

// Stats are the limiter's counts since it started, for dashboards: how its
// decisions were made, and what its leases cost Redis. No company is named.
type Stats struct {
	RedisCalls uint64 // script calls sent to Redis (each carries one or more refreshes)
	Refreshes  uint64 // refreshes answered: one exchange of a company's tokens with Redis

	AdmittedRedis  uint64 // requests admitted by the refresh they waited for
	RejectedRedis  uint64 // requests refused by the refresh they waited for
	AdmittedLeased uint64 // requests admitted from a lease, without Redis
	RejectedLeased uint64 // requests refused without Redis: the bucket was found short moments before
	Fallback       uint64 // decisions made alone because Redis was unreachable

	TokensLeased   uint64 // tokens taken beyond the requests waiting: the leases
	TokensReturned uint64 // unspent tokens given back to Redis
	TokensDropped  uint64 // unspent tokens never given back (too late, or Redis failed)

	OfferedDropped uint64 // requests not counted for TakeOffered: nobody took the counts for minutes
}

// Stats returns the limiter's counts so far.
func (l *Limiter) Stats() Stats {
	c := &l.stats
	return Stats{
		RedisCalls:     c.redisCalls.Load(),
		Refreshes:      c.refreshes.Load(),
		AdmittedRedis:  c.admittedRedis.Load(),
		RejectedRedis:  c.rejectedRedis.Load(),
		AdmittedLeased: c.admittedLeased.Load(),
		RejectedLeased: c.rejectedLeased.Load(),
		Fallback:       c.fallback.Load(),
		TokensLeased:   c.tokensLeased.Load(),
		TokensReturned: c.tokensReturned.Load(),
		TokensDropped:  c.tokensDropped.Load(),
		OfferedDropped: c.offeredDropped.Load(),
	}
}

type counters struct {
	redisCalls, refreshes                                        atomic.Uint64
	admittedRedis, rejectedRedis, admittedLeased, rejectedLeased atomic.Uint64
	fallback                                                     atomic.Uint64
	tokensLeased, tokensReturned, tokensDropped                  atomic.Uint64
	offeredDropped                                               atomic.Uint64
}

func (c *counters) leased(allowed bool) {
	if allowed {
		c.admittedLeased.Add(1)
	} else {
		c.rejectedLeased.Add(1)
	}
}

func (c *counters) refreshed(o outcome) {
	c.refreshes.Add(1)
	c.admittedRedis.Add(uint64(o.admitted))
	c.rejectedRedis.Add(uint64(o.rejected))
	c.tokensLeased.Add(uint64(o.leased))
	c.tokensReturned.Add(uint64(o.returned))
}

// instanceID names this limiter among the instances serving a company: 64
// random bits, so that two instances never count as one.
func instanceID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b[:])
}
