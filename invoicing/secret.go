package invoicing

import (
	"regexp"
	"strings"
)

// SecretPattern matches an API key's secret (igw_live_ or igw_test_ and its
// random body) or a webhook signing secret (whsec_ and its base64). Twenty
// characters make one; a match runs to the string's end, so that a
// replacement leaves nothing of it. The audit log refuses to keep one, and
// the text of a change (a key's name, an endpoint's URL or description) is
// refused with one, through the admin API or an import alike.
var SecretPattern = regexp.MustCompile(`(?i)igw_(live|test)_[0-9a-z]{20,}|whsec_[0-9a-z+/]{20,}=*`)

// HoldsSecret reports whether s holds what SecretPattern matches, as it is
// or percent-decoded (up to three times, as a URL's query may carry a
// secret encoded): a receiver or a log decodes what the gateway keeps.
func HoldsSecret(s string) bool {
	for range 4 {
		if SecretPattern.MatchString(s) {
			return true
		}
		d := unescape(s)
		if d == s {
			return false
		}
		s = d
	}
	return false
}

// unescape decodes every valid %XX of s and keeps the rest as it is
// (url.PathUnescape gives up on the whole string at one bad escape).
func unescape(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) && ishex(s[i+1]) && ishex(s[i+2]) {
			b = append(b, unhex(s[i+1])<<4|unhex(s[i+2]))
			i += 2
			continue
		}
		b = append(b, s[i])
	}
	return string(b)
}

func ishex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	}
	return c - 'a' + 10
}
