package authz

import (
	"crypto/rand"
	"encoding/base32"
	"math/big"
	"strings"

	"github.com/invoicing-ao/gateway/invoicing"
)

// Secret format: a prefix that tells people and secret scanners the mode,
// then 32 random bytes in base62, left-padded to a fixed 43 characters
// (62^43 > 2^256), so that the shape check is length + prefix + alphabet.
const (
	livePrefix   = "igw_live_"
	testPrefix   = "igw_test_"
	prefixLen    = len(livePrefix)
	secretBytes  = 32
	secretBody   = 43
	SecretLength = prefixLen + secretBody // total length of every secret
	hintTail     = 4
	idRandChars  = 20
	keyIDPrefix  = "key_"
	base62Digits = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
)

// base62OK[c] is 1 for the 62 letters and digits; a table keeps the shape
// check branch-free.
var base62OK = func() (t [256]byte) {
	for i := 0; i < len(base62Digits); i++ {
		t[base62Digits[i]] = 1
	}
	return t
}()

func modePrefix(m invoicing.Mode) string {
	if m == invoicing.Test {
		return testPrefix
	}
	return livePrefix
}

// newSecret returns a fresh secret for mode m.
func newSecret(m invoicing.Mode) (string, error) {
	var b [secretBytes]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	n := new(big.Int).SetBytes(b[:])
	body := []byte(n.Text(62))
	// big.Int's base-62 alphabet is 0-9a-zA-Z; ours is the same set, so the
	// padding digit '0' means zero in both.
	pad := strings.Repeat("0", secretBody-len(body))
	return modePrefix(m) + pad + string(body), nil
}

// secretMode checks the secret's shape without branching on its content and
// returns the mode its prefix names. ok is false for anything that is not a
// secret this package could have made; such input never reaches the hash or
// Redis.
func secretMode(s string) (m invoicing.Mode, ok bool) {
	if len(s) != SecretLength {
		return "", false
	}
	switch s[:prefixLen] {
	case livePrefix:
		m = invoicing.Live
	case testPrefix:
		m = invoicing.Test
	default:
		return "", false
	}
	good := byte(1)
	for i := prefixLen; i < len(s); i++ {
		good &= base62OK[s[i]]
	}
	if good != 1 {
		return "", false
	}
	return m, true
}

// hint is what List shows instead of the secret: the mode prefix and the last
// four characters, enough to tell keys apart, 24 bits of 256.
func hint(secret string) string {
	return secret[:prefixLen] + "…" + secret[len(secret)-hintTail:]
}

var idEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// newKeyID returns "key_" and 20 base32 characters (100 random bits).
func newKeyID() (string, error) {
	var b [idRandChars * 5 / 8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return keyIDPrefix + idEncoding.EncodeToString(b[:]), nil
}

// validKeyID rejects ids that cannot be ours before they become Redis keys.
func validKeyID(id string) bool {
	if len(id) != len(keyIDPrefix)+idRandChars || id[:len(keyIDPrefix)] != keyIDPrefix {
		return false
	}
	for i := len(keyIDPrefix); i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || '2' <= c && c <= '7') {
			return false
		}
	}
	return true
}
