package admin

import (
	"crypto/sha256"
	"crypto/subtle"
)

// tokenEqual compares a presented secret with the expected one in time that
// depends on neither: both are hashed first, so even their lengths stay
// hidden (subtle.ConstantTimeCompare alone returns at once on a length
// mismatch).
func tokenEqual(given, want string) bool {
	g, w := sha256.Sum256([]byte(given)), sha256.Sum256([]byte(want))
	return subtle.ConstantTimeCompare(g[:], w[:]) == 1
}
