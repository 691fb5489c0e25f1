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
	cacheLimited                      // unknown here, over the bound of lookups: not asked
)

var outcomeNames = [...]string{"skipped", "hit", "miss", "negative", "stale", "limited"}

func (o cacheOutcome) String() string { return outcomeNames[o] }

// lookupResult is what a lookup of Verify's found.
type lookupResult uint8

const (
	lookupNone    lookupResult = iota // Redis was not asked (known to be down)
	lookupFound                       // an active key of the mode (expired or not)
	lookupInvalid                     // no record, revoked, the other mode, unreadable
	lookupFailed                      // Redis did not answer
)

// cacheCounters count Verify's outcomes other than hits (counted per cache
// shard, see posCache), its lookups and its refusals.
type cacheCounters struct {
	misses, negative, stale atomic.Uint64
	// Renewals ahead of expiry (renew.go), by result.
	renewed, renewDropped, renewFailed atomic.Uint64
	// lookups[known][result]: Verify's lookups of digests this instance
	// did (1) or did not (0) know.
	lookups [2][lookupFailed + 1]atomic.Uint64
	refused [refusals]atomic.Uint64 // secrets refused without a lookup
}

func (c *cacheCounters) looked(known bool, r lookupResult) {
	i := 0
	if known {
		i = 1
	}
	c.lookups[i][r].Add(1)
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
func (k *Keyring) Stats() CacheStats { return k.v.cacheStats() }

func (k *verifier) cacheStats() CacheStats {
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

// LookupResults count lookups by what Redis answered.
type LookupResults struct {
	Found   uint64 // an active key (expired or not)
	Invalid uint64 // nothing usable: no record, revoked, the other mode
	Failed  uint64 // Redis did not answer
}

// LookupStats count Verify's Redis lookups (not the renewals') and the
// secrets it refused without one, since New.
type LookupStats struct {
	// Known are the lookups of keys this instance has verified before
	// (past CacheTTL), never bounded; Unknown, of digests it did not know,
	// under the bound of lookups.
	Known, Unknown LookupResults
	// Refused counts secrets refused without a lookup, by reason:
	// "malformed", "checksum", "legacy_form" (ErrInvalidKey), and
	// "source_limit", "instance_limit" (ErrKeyLookupsLimited). Repeats of
	// an unknown secret answered by the negative cache are CacheStats'.
	Refused map[string]uint64
	// LegacyVerified counts successful verifications of secrets of the
	// first form (no checksum): while it grows, keys of that form are in
	// use, and RefuseLegacyForm would lock them out.
	LegacyVerified uint64
}

// LookupStats returns the lookup and refusal counts; cheap enough for every
// scrape.
func (k *Keyring) LookupStats() LookupStats { return k.v.lookupStats() }

func (k *verifier) lookupStats() LookupStats {
	res := func(i int) LookupResults {
		l := &k.stats.lookups[i]
		return LookupResults{Found: l[lookupFound].Load(), Invalid: l[lookupInvalid].Load(), Failed: l[lookupFailed].Load()}
	}
	st := LookupStats{Known: res(1), Unknown: res(0), Refused: make(map[string]uint64, refusals), LegacyVerified: k.pos.legacyCount()}
	for r := range refusals {
		st.Refused[refusalNames[r]] = k.stats.refused[r].Load()
	}
	return st
}

// RefusalReasons are the keys of LookupStats.Refused, in a stable order.
func RefusalReasons() []string { return append([]string(nil), refusalNames[:]...) }

// verifyTraced is VerifyFrom inside an "authz.Verify" span, made only when
// the caller's span records: an untraced request pays one context lookup,
// and no allocation, for tracing. The span says how the cache answered,
// never anything of the secret.
func (k *verifier) verifyTraced(ctx context.Context, secret string, src Source) (Key, error) {
	ctx, span := k.tracer.Start(ctx, "authz.Verify")
	defer span.End()
	key, outcome, err := k.verify(ctx, secret, src)
	result := "valid"
	switch {
	case errors.Is(err, ErrUnavailable):
		result = "unavailable"
		span.SetStatus(codes.Error, "key verification unavailable")
	case errors.Is(err, ErrKeyLookupsLimited):
		result = "limited"
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
