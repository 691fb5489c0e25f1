package authz

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"time"

	"github.com/invoicing-ao/gateway/invoicing"
	"go.opentelemetry.io/otel/trace"
)

// Verify returns the active key whose secret this is. Malformed, unknown and
// revoked secrets are ErrInvalidKey, keys past their expiry ErrExpiredKey
// (on every instance from the moment of expiry: cached copies compare it
// with the clock on every use); ErrUnavailable means the key could not
// be checked (Redis fails and no copy verified within StaleTTL is cached).
//
// A cached key younger than CacheTTL is answered from memory without
// allocating; otherwise one HGETALL asks Redis, shared by concurrent callers
// of the same key. Unknown digests are remembered for NegativeTTL. A key
// created a moment ago works at once on every instance: its digest comes
// from 256 fresh random bits, so no negative cache can have seen it.
//
// A secret whose text cannot be ours (wrong shape, wrong checksum) is
// ErrInvalidKey with no lookup. The lookups of keys this instance does not
// know are bounded (lookups.go): over the bound, such a key is
// ErrKeyLookupsLimited, unchecked. Verify is VerifyFrom from an unknown
// source: all its callers share one source's bound.
func (k *Keyring) Verify(ctx context.Context, secret string) (Key, error) {
	return k.v.verifyFrom(ctx, secret, nil)
}

// VerifyFrom is Verify for a request from src, whose bound of lookups of
// unknown keys applies; src is asked for its address only when such a
// lookup is to be made. A nil src is an unknown source.
func (k *Keyring) VerifyFrom(ctx context.Context, secret string, src Source) (Key, error) {
	return k.v.verifyFrom(ctx, secret, src)
}

// verifyFrom is VerifyFrom, traced when the caller's span records.
func (k *verifier) verifyFrom(ctx context.Context, secret string, src Source) (Key, error) {
	if trace.SpanFromContext(ctx).IsRecording() {
		return k.verifyTraced(ctx, secret, src)
	}
	key, _, err := k.verify(ctx, secret, src)
	return key, err
}

// verify is VerifyFrom, also telling how the cache answered (for spans and
// Stats).
func (k *verifier) verify(ctx context.Context, secret string, src Source) (Key, cacheOutcome, error) {
	mode, f := parseShape(secret)
	switch {
	case f == formMalformed:
		k.stats.refused[refusedMalformed].Add(1)
		return Key{}, cacheSkipped, ErrInvalidKey
	case f == formLegacy && k.noLegacy:
		k.stats.refused[refusedLegacyForm].Add(1)
		return Key{}, cacheSkipped, ErrInvalidKey
	}
	// A fixed-size copy on the stack: []byte(secret) would allocate.
	var buf [SecretLength]byte
	n := copy(buf[:], secret)
	d := sha256.Sum256(buf[:n])
	now := k.now().UnixNano()
	e := k.pos.get(&d)
	if e != nil {
		if age := now - e.verified; age < k.cacheTTL {
			k.pos.hit(&d, f == formLegacy)
			if e.expired(now) {
				return Key{}, cacheHit, ErrExpiredKey
			}
			k.touch(e, &d, now)
			if age >= k.renewAfter {
				k.renewSoon(e, &d)
			}
			return e.key, cacheHit, nil
		}
	} else if f == formCurrent && !checksumOK(secret) {
		k.stats.refused[refusedChecksum].Add(1)
		return Key{}, cacheSkipped, ErrInvalidKey
	} else if k.neg.has(&d, now) {
		k.stats.negative.Add(1)
		return Key{}, cacheNegative, ErrInvalidKey
	}
	// Callers sharing another's fetch count as misses, even when that fetch
	// was answered from the stale copy: only its leader knows.
	outcome := cacheMiss
	key, err := k.flight.do(ctx, &d, func() (Key, error) {
		key, o, err := k.fetch(ctx, &d, mode, now, lookupOf{known: e != nil, src: src})
		outcome = o
		return key, err
	})
	k.stats.count(outcome)
	if err == nil && f == formLegacy {
		k.pos.countLegacy(&d)
	}
	if err != nil {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return Key{}, outcome, fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		return Key{}, outcome, err
	}
	return key, outcome, nil
}

// errRedisDown stands for the last Redis failure while Verify skips Redis.
var errRedisDown = errors.New("redis failed a moment ago; not asked again yet")

// lookupOf is what the bound of lookups needs to know of one: whether the
// digest is known here (then it is not bounded) and where it comes from.
type lookupOf struct {
	known bool
	src   Source
}

// fetch asks Redis for the digest's record and updates the caches. The
// outcome is cacheMiss, or cacheStale when Redis failed and the copy in
// memory answered, or cacheLimited when the bound refused the lookup.
func (k *verifier) fetch(ctx context.Context, d *digest, mode invoicing.Mode, now int64, lk lookupOf) (Key, cacheOutcome, error) {
	// Admitted before the outage check: a refusal must not take the turn
	// of the one caller that probes Redis again.
	var t ticket
	if !lk.known {
		var lim *limitedError
		if t, lim = k.limit.admit(lk.src, time.Unix(0, now)); lim != nil {
			k.stats.refused[lim.which].Add(1)
			return Key{}, cacheLimited, lim
		}
	}
	key, outcome, res, err := k.ask(ctx, d, mode, now, lk.known)
	if !lk.known {
		t.done(k.now(), res == lookupInvalid)
	}
	return key, outcome, err
}

// ask is fetch once admitted; res says what Redis answered, if it was
// asked.
func (k *verifier) ask(ctx context.Context, d *digest, mode invoicing.Mode, now int64, known bool) (Key, cacheOutcome, lookupResult, error) {
	// The caller's cancellation must not fail the other callers sharing
	// this fetch; the timeout bounds it instead.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), k.timeout)
	defer cancel()
	fromMemory := func(res lookupResult, err error) (Key, cacheOutcome, lookupResult, error) {
		if e := k.pos.get(d); e != nil && now-e.verified <= k.staleTTL {
			if e.expired(now) {
				return Key{}, cacheStale, res, ErrExpiredKey
			}
			k.touch(e, d, now)
			return e.key, cacheStale, res, nil
		}
		return Key{}, cacheMiss, res, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	// While Redis is known to be down, one caller per retryEvery probes it;
	// the others answer at once instead of each waiting out the timeout.
	if until := k.downUntil.Load(); until != 0 && (now < until || !k.downUntil.CompareAndSwap(until, now+k.retryEvery)) {
		return fromMemory(lookupNone, errRedisDown)
	}
	m, err := k.rdb.HGetAll(ctx, k.l.recordOf(d)).Result()
	if err != nil {
		k.stats.looked(known, lookupFailed)
		k.downUntil.Store(now + k.retryEvery)
		if k.degraded.CompareAndSwap(false, true) {
			k.log.Warn("authz: Redis unavailable; serving recently verified keys from memory", "err", err)
		}
		return fromMemory(lookupFailed, err)
	}
	k.downUntil.Store(0)
	if k.degraded.CompareAndSwap(true, false) {
		k.log.Info("authz: Redis reachable again")
	}
	e, err := k.settle(d, mode, m, now)
	if err != nil && !errors.Is(err, ErrExpiredKey) {
		k.stats.looked(known, lookupInvalid)
		return Key{}, cacheMiss, lookupInvalid, err
	}
	k.stats.looked(known, lookupFound)
	if err != nil {
		return Key{}, cacheMiss, lookupFound, err
	}
	k.touch(e, d, now)
	return e.key, cacheMiss, lookupFound, nil
}

// settle applies a key record read from Redis (m, asked at now) to the
// caches: an active key of the mode is (re)cached, anything else forgotten
// and remembered as invalid for NegativeTTL. It returns the new entry, or
// ErrInvalidKey, or ErrExpiredKey with the entry.
func (k *verifier) settle(d *digest, mode invoicing.Mode, m map[string]string, now int64) (*entry, error) {
	key, found, err := decodeRecord(m)
	if err != nil {
		k.log.Error("authz: unreadable key record", "err", err)
	}
	if err != nil || !found || key.State != StateActive || key.Mode != mode {
		k.pos.drop(d)
		k.neg.add(d, now+k.negTTL, now)
		return nil, ErrInvalidKey
	}
	// An expired key is remembered as what it is, not as invalid: its
	// owner is told it expired, from memory, until CacheTTL has passed.
	e := &entry{key: key, verified: now}
	if key.ExpiresAt != nil {
		e.expires = max(key.ExpiresAt.UnixNano(), 1)
	}
	k.pos.put(d, e)
	if e.expired(now) {
		return e, ErrExpiredKey
	}
	return e, nil
}
