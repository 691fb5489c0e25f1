// Package authz knows API keys: secrets, SHA-256 hashing, modes, scopes,
// storage in Redis and an in-memory cache for verification. It knows nothing
// of HTTP, of the database, or of rate limits.
//
// A secret looks like "igw_live_" or "igw_test_" followed by 43 base62
// characters (32 bytes from crypto/rand) and a checksum of 6 more (secret.go);
// secrets of the first form, without the checksum, still verify. Only its
// SHA-256 digest is stored or compared; the secret itself is returned once,
// by Create, and never again. Verify refuses a secret whose text cannot be
// ours without asking Redis, and bounds the lookups of keys it does not
// know, per source address and per instance (lookups.go), so that no caller
// can make Redis answer for every key it invents.
//
// Two jobs, two types. Keyring keeps keys in Redis and changes them:
// creation, rolls, revocation, listing, reclaiming the slots a crash left,
// export and import (manage.go, roll.go, reclaim.go, state.go). Its
// verifier answers Verify on the request path from memory and keeps that
// memory true: the caches, the bound of lookups, renewals ahead of the
// TTL, last-used writes, the outage fallback and the revocations other
// instances announce (verifier.go, verify.go, renew.go, touch.go,
// observe.go). They share Redis, the layout and the clock. They are apart
// so that what a change may do to the request path's memory is visible: it
// tells the verifier what to forget (forget, revoked, stored), nothing
// else.
package authz
