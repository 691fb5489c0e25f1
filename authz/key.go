package authz

import (
	"errors"
	"strings"
	"time"

	"github.com/invoicing-ao/gateway/invoicing"
)

// Errors of the key store. The gateway maps them to statuses; none of them
// ever carries a secret.
var (
	// ErrInvalidKey: malformed, unknown or revoked secret (401).
	ErrInvalidKey = errors.New("authz: invalid API key")
	// ErrUnavailable: the key cannot be checked now, because Redis does not
	// answer and no recently verified copy is in memory (503). Never mixed up
	// with ErrInvalidKey, which would send integrators rotating good keys.
	ErrUnavailable = errors.New("authz: key store unavailable")
	// ErrKeyLimit: the company already has MaxActiveKeys active keys.
	ErrKeyLimit = errors.New("authz: active key limit reached")
	// ErrNotFound: no key has this id.
	ErrNotFound = errors.New("authz: key not found")
	// ErrInvalidName: the key's name is too long or holds control characters.
	ErrInvalidName = errors.New("authz: invalid key name")
)

// Key states.
const (
	StateActive  = "active"
	StateRevoked = "revoked"
)

// MaxNameLen bounds a key's human-readable name, in bytes.
const MaxNameLen = 100

// Key is what the gateway learns about a verified key, and what the
// management operations show. It never holds the secret.
type Key struct {
	ID         string // public id, "key_" + 20 base32 characters; safe to log
	CompanyID  string // lower-case UUID
	Mode       invoicing.Mode
	Scopes     ScopeSet
	Name       string
	Hint       string // "igw_live_…x9Qa": the prefix and the last 4 characters
	State      string // StateActive or StateRevoked
	CreatedAt  time.Time
	LastUsedAt *time.Time
	RevokedAt  *time.Time
}

// Authorize checks the request's company header value and then the route's
// scope: a key used for another company is refused before its scopes are
// even looked at. Company ids compare case-insensitively, as UUIDs do.
func (k Key) Authorize(companyID string, need Scope) error {
	if companyID == "" || !strings.EqualFold(companyID, k.CompanyID) {
		return ErrWrongCompany
	}
	if !k.Scopes.Has(need) {
		return ErrMissingScope
	}
	return nil
}

// NewKey is what Create needs. The caller has checked that the company
// exists.
type NewKey struct {
	CompanyID string
	Mode      invoicing.Mode
	Scopes    ScopeSet
	Name      string
}

func validName(s string) bool {
	if len(s) > MaxNameLen {
		return false
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f || r == '\uFFFD' {
			return false
		}
	}
	return true
}
