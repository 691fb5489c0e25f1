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
package authz
