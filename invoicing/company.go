package invoicing

import (
	"fmt"
	"strings"
)

// ErrInvalidCompany is returned for a company id that is not a UUID.
var ErrInvalidCompany = Define(Error{Kind: Invalid, Code: "invalid_body", Title: "Invalid request body", Message: "invalid company id (want a UUID)"})

// ParseCompanyID reads a company id as callers send it (surrounding spaces
// and upper-case hex forgiven) and returns its one canonical form, the
// lower-case UUID under which the platform, the key store, the limits and the
// usage counters all know the company.
func ParseCompanyID(s string) (string, error) {
	id, ok := CanonicalUUID(strings.TrimSpace(s))
	if !ok {
		return "", fmt.Errorf("%w: %q", ErrInvalidCompany, Clip(s))
	}
	return id, nil
}

// CanonicalUUID returns s, an 8-4-4-4-12 hex UUID, in lower case; false when
// s has any other shape. It allocates only when s has upper-case letters.
func CanonicalUUID(s string) (string, bool) {
	if len(s) != 36 {
		return "", false
	}
	upper := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return "", false
			}
			continue
		}
		switch {
		case c >= '0' && c <= '9', c >= 'a' && c <= 'f':
		case c >= 'A' && c <= 'F':
			upper = true
		default:
			return "", false
		}
	}
	if upper {
		return strings.ToLower(s), true
	}
	return s, true
}
