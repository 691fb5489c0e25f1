package authz

import (
	"crypto/rand"
	"encoding/base32"
	"hash/crc32"
	"math/big"
	"strings"

	"github.com/invoicing-ao/gateway/invoicing"
)

// Secret forms. Every secret starts with a prefix that tells people and
// secret scanners its mode, then 32 random bytes in base62, left-padded to a
// fixed 43 characters (62^43 > 2^256). Secrets made now end with a checksum:
// six base62 characters of the CRC-32 (IEEE) of everything before them, so
// that a mistyped, truncated or invented secret is refused from its text
// alone, and a scanner can tell a real secret from a look-alike offline (as
// GitHub's and Stripe's tokens do). The first form, without the checksum,
// is 6 characters shorter; its keys keep working (see Config.RefuseLegacyForm).
//
// A checksum is no secret: anyone can compute it. It keeps junk away from
// Redis, not an attacker who means it; the bound of lookups (lookups.go) is
// what protects Redis from those.
const (
	livePrefix    = "igw_live_"
	testPrefix    = "igw_test_"
	prefixLen     = len(livePrefix)
	secretBytes   = 32
	secretBody    = 43 // the random part
	checksumChars = 6  // 62^6 > 2^32
	// SecretLength is the length of every secret made now.
	SecretLength = prefixLen + secretBody + checksumChars
	// LegacySecretLength is the length of a secret of the first form (no
	// checksum).
	LegacySecretLength = prefixLen + secretBody
	hintTail           = 4
	idRandChars        = 20
	keyIDPrefix        = "key_"
	base62Digits       = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
)

// base62Val[c] is the value of base62 digit c plus one (0: not a digit); a
// table keeps the shape check branch-free.
var base62Val = func() (t [256]byte) {
	for i := 0; i < len(base62Digits); i++ {
		t[base62Digits[i]] = byte(i + 1)
	}
	return t
}()

func modePrefix(m invoicing.Mode) string {
	if m == invoicing.Test {
		return testPrefix
	}
	return livePrefix
}

// newSecret returns a fresh secret for mode m, with its checksum.
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
	s := modePrefix(m) + pad + string(body)
	return s + checksum(s), nil
}

// crcTable is CRC-32's (IEEE) table.
var crcTable = crc32.MakeTable(crc32.IEEE)

// crc is the CRC-32 (IEEE) of s, a byte at a time from the string itself:
// hash/crc32's functions take a []byte, which would be a copy on the heap
// on every check (they dispatch through a function variable).
func crc(s string) uint32 {
	c := ^uint32(0)
	for i := 0; i < len(s); i++ {
		c = crcTable[byte(c)^s[i]] ^ c>>8
	}
	return ^c
}

// checksum is the six-character checksum of s: CRC-32 (IEEE) in base62,
// most significant digit first, zero-padded.
func checksum(s string) string {
	c := crc(s)
	var out [checksumChars]byte
	for i := checksumChars - 1; i >= 0; i-- {
		out[i] = base62Digits[c%62]
		c /= 62
	}
	return string(out[:])
}

// form is what a secret's text says of it, before any lookup.
type form uint8

const (
	formMalformed   form = iota // not the shape of any secret this package makes
	formBadChecksum             // the current shape, with a wrong checksum
	formLegacy                  // the first form: no checksum to check
	formCurrent                 // the current form, checksum right
)

// parseSecret checks the secret's shape without branching on its content,
// then its checksum, and returns the mode its prefix names and its form.
// Only formLegacy and formCurrent may cost a lookup.
func parseSecret(s string) (invoicing.Mode, form) {
	m, f := parseShape(s)
	if f == formCurrent && !checksumOK(s) {
		return m, formBadChecksum
	}
	return m, f
}

// parseShape is parseSecret without the checksum: formCurrent means the
// current shape, checksum not yet checked. Verify checks it only for keys
// it does not know: one in its cache was looked up, so its checksum was
// right, and the hot path skips the CRC.
func parseShape(s string) (invoicing.Mode, form) {
	if len(s) != SecretLength && len(s) != LegacySecretLength {
		return "", formMalformed
	}
	var m invoicing.Mode
	switch s[:prefixLen] {
	case livePrefix:
		m = invoicing.Live
	case testPrefix:
		m = invoicing.Test
	default:
		return "", formMalformed
	}
	good := byte(1)
	for i := prefixLen; i < len(s); i++ {
		good &= min(base62Val[s[i]], 1)
	}
	if good != 1 {
		return "", formMalformed
	}
	if len(s) == LegacySecretLength {
		return m, formLegacy
	}
	return m, formCurrent
}

// checksumOK reports whether the last checksumChars of s, a secret of the
// current shape, read as a number, equal the CRC of the rest.
func checksumOK(s string) bool {
	var v uint64
	for i := LegacySecretLength; i < len(s); i++ {
		v = v*62 + uint64(base62Val[s[i]]-1)
	}
	return v == uint64(crc(s[:LegacySecretLength]))
}

// hint is what List shows instead of the secret: the mode prefix and the last
// four characters (of the checksum, in the current form), enough to tell keys
// apart, 24 bits of 256.
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
