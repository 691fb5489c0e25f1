package authz

import (
	"errors"
	"net/netip"
	"strings"
	"time"

	"github.com/invoicing-ao/gateway/invoicing"
)

// Errors of the key store. The gateway maps them to statuses; none of them
// ever carries a secret.
var (
	// ErrInvalidKey: malformed, unknown or revoked secret (401).
	ErrInvalidKey = errors.New("authz: invalid API key")
	// ErrExpiredKey: a key past its expiry (401, said apart from
	// ErrInvalidKey so that its owner knows to use its successor). A key
	// both revoked and expired is ErrInvalidKey.
	ErrExpiredKey = errors.New("authz: API key expired")
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
	// ErrInvalidExpiry: an expiry that is not in the future.
	ErrInvalidExpiry = errors.New("authz: a key's expiry must be in the future")
	// ErrNotRollable: the key is revoked, expired, or was rolled already.
	ErrNotRollable = errors.New("authz: key cannot be rolled")
	// ErrRollLimit: the company already has MaxActiveKeys keys in their
	// roll-over overlap.
	ErrRollLimit = errors.New("authz: limit of keys in their roll-over overlap reached")
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
	State      string // StateActive or StateRevoked; see Status for expiry
	CreatedAt  time.Time
	LastUsedAt *time.Time
	RevokedAt  *time.Time
	// ExpiresAt is when the key stops working; nil means never.
	ExpiresAt *time.Time
	// Replaces and ReplacedBy link the keys of a roll (key ids; "" none).
	Replaces, ReplacedBy string
	// AllowedCIDRs are the networks requests with this key may come from,
	// canonical and sorted; empty means any.
	AllowedCIDRs []netip.Prefix
}

// StateExpired is what Status says of an active key past its expiry; it is
// never stored: expiry is a time, compared with the clock on every use.
const StateExpired = "expired"

// Status is the key's state at now: revoked, expired or active.
func (k Key) Status(now time.Time) string {
	if k.State == StateActive && k.ExpiresAt != nil && !now.Before(*k.ExpiresAt) {
		return StateExpired
	}
	return k.State
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
	// ExpiresAt is when the key stops working (kept to the millisecond);
	// nil means never. It must be in the future.
	ExpiresAt *time.Time
	// AllowedCIDRs limit the networks the key is accepted from (see
	// ParseCIDRs); empty means any.
	AllowedCIDRs []netip.Prefix
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
