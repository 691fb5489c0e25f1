// Package authz knows API keys: secrets, SHA-256 hashing, modes, scopes,
// storage in Redis and an in-memory cache for verification. It knows nothing
// of HTTP, of the database, or of rate limits.
//
// A secret looks like "igw_live_" or "igw_test_" followed by 43 base62
// characters (32 bytes from crypto/rand). Only its SHA-256 digest is stored
// or compared; the secret itself is returned once, by Create, and never
// again.
package authz
