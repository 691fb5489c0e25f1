package authz

import (
	"net/netip"
	"strings"
	"time"

	"github.com/invoicing-ao/gateway/invoicing"
)

// Errors of the key store, each with its kind and the API's code
// (invoicing.Define): the HTTP layer answers them by those. None of them
// ever carries a secret.
var (
	// ErrInvalidKey: malformed, unknown or revoked secret (401).
	ErrInvalidKey = invoicing.Define(invoicing.Error{Kind: invoicing.Unauthenticated, Code: "invalid_api_key", Title: "Invalid API key", Detail: "The API key is malformed, unknown or revoked.", Message: "authz: invalid API key"})
	// ErrExpiredKey: a key past its expiry (401, said apart from
	// ErrInvalidKey so that its owner knows to use its successor). A key
	// both revoked and expired is ErrInvalidKey.
	ErrExpiredKey = invoicing.Define(invoicing.Error{Kind: invoicing.Unauthenticated, Code: "expired_api_key", Title: "Expired API key", Detail: "The API key has expired; use the key that replaced it.", Message: "authz: API key expired"})
	// ErrUnavailable: the key cannot be checked now, because Redis does not
	// answer and no recently verified copy is in memory (503). Never mixed up
	// with ErrInvalidKey, which would send integrators rotating good keys.
	ErrUnavailable = invoicing.Define(invoicing.Error{Kind: invoicing.Unavailable, Code: "authentication_unavailable", Title: "Key verification unavailable", Detail: "The key cannot be verified right now; retry later. Your key was not rejected.", Message: "authz: key store unavailable"})
	// ErrKeyLookupsLimited: the key is unknown to this instance, and its
	// source, or all sources together, sent too many keys that turned out
	// unknown (see Config.SourceLookups): it was neither looked up nor
	// rejected (429, with when to retry). Not ErrInvalidKey: a good key's
	// first use may meet it, and its owner must not be sent to replace it.
	ErrKeyLookupsLimited = invoicing.Define(invoicing.Error{Kind: invoicing.Limited, Code: "key_lookups_limited", Title: "Too many unknown API keys", Detail: "Too many API keys unknown to the gateway came from your network, or from everywhere; this key was not checked, and not rejected. Retry after the Retry-After delay.", Message: "authz: lookups of unknown keys over their bound"})
	// ErrKeyLimit: the company already has MaxActiveKeys active keys.
	ErrKeyLimit = invoicing.Define(invoicing.Error{Kind: invoicing.Conflict, Code: "key_limit_reached", Title: "Active key limit reached", Detail: "The company already has the maximum number of active keys.", Message: "authz: active key limit reached"})
	// ErrNotFound: no key has this id.
	ErrNotFound = invoicing.Define(invoicing.Error{Kind: invoicing.NotFound, Code: "not_found", Title: "Resource not found", Detail: "No such resource.", Message: "authz: key not found"})
	// ErrInvalidName: the key's name is too long or holds control, invisible
	// or direction-changing characters.
	ErrInvalidName = invoicing.Define(invoicing.Error{Kind: invoicing.Invalid, Code: "invalid_body", Title: "Invalid request body", Message: "authz: invalid key name"})
	// ErrInvalidExpiry: an expiry that is not in the future.
	ErrInvalidExpiry = invoicing.Define(invoicing.Error{Kind: invoicing.Invalid, Code: "invalid_body", Title: "Invalid request body", Message: "authz: a key's expiry must be in the future"})
	// ErrNotRollable: the key is revoked, expired, or was rolled already.
	ErrNotRollable = invoicing.Define(invoicing.Error{Kind: invoicing.Conflict, Code: "key_not_rollable", Title: "Key cannot be rolled", Message: "authz: key cannot be rolled"})
	// ErrRollLimit: the company already has MaxActiveKeys keys in their
	// roll-over overlap.
	ErrRollLimit = invoicing.Define(invoicing.Error{Kind: invoicing.Conflict, Code: "key_limit_reached", Title: "Active key limit reached", Detail: "The company already has the maximum number of rolled keys in their overlap; revoke one, or roll with no overlap.", Message: "authz: limit of keys in their roll-over overlap reached"})
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
	// LegacyForm is true for a key whose secret has the first form, without
	// checksum (see secret.go): such keys stop working when
	// Config.RefuseLegacyForm is set; rolling one gives a successor of the
	// current form.
	LegacyForm bool
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
		if r < 0x20 || r == 0x7f || r == '\uFFFD' || invoicing.Hidden(r) {
			return false
		}
	}
	return true
}
