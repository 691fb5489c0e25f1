package authz

import (
	"context"
	"errors"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
)

// tracerName names the instrumentation scope of authz's spans.
const tracerName = "github.com/invoicing-ao/gateway/authz"

// cacheOutcome is how Verify's cache answered.
type cacheOutcome uint8

const (
	cacheSkipped  cacheOutcome = iota // malformed secret: no lookup at all
	cacheHit                          // a fresh verified copy answered
	cacheMiss                         // Redis was asked
	cacheNegative                     // remembered as unknown or revoked
	cacheStale                        // Redis failed; a copy within StaleTTL answered
)

var outcomeNames = [...]string{"skipped", "hit", "miss", "negative", "stale"}

func (o cacheOutcome) String() string { return outcomeNames[o] }

// cacheCounters count Verify's outcomes other than hits (counted per cache
// shard, see posCache).
type cacheCounters struct {
	misses, negative, stale atomic.Uint64
	// Renewals ahead of expiry (renew.go), by result.
	renewed, renewDropped, renewFailed atomic.Uint64
}

func (c *cacheCounters) count(o cacheOutcome) {
	switch o {
	case cacheMiss:
		c.misses.Add(1)
	case cacheNegative:
		c.negative.Add(1)
	case cacheStale:
		c.stale.Add(1)
	}
}

// CacheStats are the counts of Verify's cache outcomes since New.
type CacheStats struct {
	Hits     uint64 // answered from a fresh verified copy
	Misses   uint64 // Redis was asked (or a concurrent ask was shared)
	Negative uint64 // answered "invalid" from the negative cache
	Stale    uint64 // Redis failed and a copy within StaleTTL answered

	// Renewals of keys in use ahead of their cache expiry, off the request
	// path (renew.go): re-cached, dropped (no longer active: revoked,
	// unknown), or failed (Redis did not answer; read on the next use past
	// CacheTTL instead).
	Renewed, RenewDropped, RenewFailed uint64
}

// Stats returns the cache outcome counts; cheap enough for every scrape.
func (k *Keyring) Stats() CacheStats {
	return CacheStats{
		Hits:     k.pos.hitCount(),
		Misses:   k.stats.misses.Load(),
		Negative: k.stats.negative.Load(),
		Stale:    k.stats.stale.Load(),

		Renewed:      k.stats.renewed.Load(),
		RenewDropped: k.stats.renewDropped.Load(),
		RenewFailed:  k.stats.renewFailed.Load(),
	}
}

// verifyTraced is Verify inside an "authz.Verify" span, made only when the
// caller's span records: an untraced request pays one context lookup, and
// no allocation, for tracing. The span says how the cache answered, never
// anything of the secret.
func (k *Keyring) verifyTraced(ctx context.Context, secret string) (Key, error) {
	ctx, span := k.tracer.Start(ctx, "authz.Verify")
	defer span.End()
	key, outcome, err := k.verify(ctx, secret)
	result := "valid"
	switch {
	case errors.Is(err, ErrUnavailable):
		result = "unavailable"
		span.SetStatus(codes.Error, "key verification unavailable")
	case errors.Is(err, ErrExpiredKey):
		result = "expired"
	case err != nil:
		result = "invalid"
	}
	attrs := []attribute.KeyValue{attribute.String("authz.result", result)}
	if outcome != cacheSkipped {
		attrs = append(attrs, attribute.String("authz.cache", outcome.String()))
	}
	if err == nil {
		attrs = append(attrs, attribute.String("authz.key_id", key.ID))
	}
	span.SetAttributes(attrs...)
	return key, err
}
