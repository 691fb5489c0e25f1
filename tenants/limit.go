// Package tenants knows each company's request limits: defaults, live
// overrides kept in Redis, the global admission decision (and a count of the
// requests offered to it per second), the local fallback when Redis is
// unreachable, a per-instance cap on requests in flight to the database, and
// what another limit would have refused of recorded traffic. It knows
// nothing of HTTP, of API keys or of the database.
package tenants

import (
	"math"
	"time"

	"github.com/invoicing-ao/gateway/invoicing"
)

// Bounds of a Limit. They keep the arithmetic of the Redis script exact
// (microsecond timestamps in a float64) and reject values that can only be
// typing mistakes.
const (
	MinRate  = 0.001   // one request per 1000 s
	MaxRate  = 100_000 // requests per second, far above what one database serves
	MaxBurst = 100_000
)

var (
	// ErrInvalidLimit is returned for a rate or burst outside the bounds.
	ErrInvalidLimit = invoicing.Define(invoicing.Error{Kind: invoicing.Invalid, Code: "invalid_body", Title: "Invalid request body", Message: "tenants: invalid limit"})
	// ErrBusy is returned by Guard.Acquire when the company already has its
	// share of requests in flight to the database.
	ErrBusy = invoicing.Define(invoicing.Error{Kind: invoicing.Limited, Code: "concurrency_limit", Title: "Too many requests in flight", Detail: "Too many requests of this company are in flight; retry shortly.", Message: "tenants: too many requests in flight for this company"})
)

// Limit is a rate with a burst.
type Limit struct {
	Rate  float64 // sustained requests per second
	Burst int     // requests that may arrive at once
}

// Validate reports ErrInvalidLimit for a rate or burst outside the bounds,
// as an invoicing.FieldError naming "rate" or "burst".
func (l Limit) Validate() error {
	if math.IsNaN(l.Rate) || l.Rate < MinRate || l.Rate > MaxRate {
		return invoicing.InvalidField(ErrInvalidLimit, "rate", "must be from %g to %d requests per second", MinRate, MaxRate)
	}
	if l.Burst < 1 || l.Burst > MaxBurst {
		return invoicing.InvalidField(ErrInvalidLimit, "burst", "must be a whole number of requests from 1 to %d", MaxBurst)
	}
	return nil
}

// interval is the time between two requests at the sustained rate.
func (l Limit) interval() time.Duration {
	return time.Duration(float64(time.Second) / l.Rate)
}

// Limits are a company's limits for both modes.
type Limits struct {
	Live, Test             Limit
	LiveCustom, TestCustom bool // true when an override is set for that mode (false = default from config)
}

// Decision is the outcome of one admission check.
type Decision struct {
	Allowed    bool
	Limit      Limit         // the limit applied
	Remaining  int           // requests that could still be admitted right now (see Leased)
	RetryAfter time.Duration // when !Allowed: how long until one request would be admitted
	Reset      time.Duration // how long until the bucket is full again
	Local      bool          // decided by the in-process fallback because Redis was unreachable
	// Leased: decided by this instance from its lease, without Redis.
	// Remaining and Reset are then the bucket as Redis reported it at the
	// lease's refresh, at most the lease TTL earlier, with this instance's
	// unspent tokens counted in: other instances' requests since are not.
	Leased bool
}
