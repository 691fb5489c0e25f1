package authz

import (
	"strings"

	"github.com/invoicing-ao/gateway/invoicing"
)

// Errors returned by the parsers and by Key.Authorize.
var (
	ErrUnknownScope = invoicing.Define(invoicing.Error{Kind: invoicing.Invalid, Code: "invalid_body", Title: "Invalid request body", Message: "authz: unknown scope"})
	ErrWrongCompany = invoicing.Define(invoicing.Error{Kind: invoicing.Forbidden, Code: "company_mismatch", Title: "Key does not belong to this company", Detail: "The API key does not belong to the company in X-Company-Id.", Message: "authz: key belongs to another company"})
	ErrMissingScope = invoicing.Define(invoicing.Error{Kind: invoicing.Forbidden, Code: "insufficient_scope", Title: "Insufficient scope", Detail: "The API key lacks the scope this operation needs.", Message: "authz: key lacks the required scope"})
)

// Scope names one permission of the public API.
type Scope string

// The API's scopes: each operation needs one (its x-scopes in
// gateway/apidocs/openapi.yaml).
const (
	InvoicesRead Scope = "invoices:read"
	ClientsRead  Scope = "clients:read"
	ClientsWrite Scope = "clients:write"
	// EventsRead reads the company's events feed (GET /events): the
	// webhooks' events, for receivers without a public address.
	EventsRead Scope = "events:read"
)

// canonical is the order List and String use; a scope's bit is 1<<index.
var canonical = [...]Scope{InvoicesRead, ClientsRead, ClientsWrite, EventsRead}

const allScopes = ScopeSet(1<<len(canonical) - 1)

// ScopeSet is a bit set of scopes, so that the per-request check is a mask
// and allocates nothing.
type ScopeSet uint8

func bit(x Scope) ScopeSet {
	for i, c := range canonical {
		if c == x {
			return 1 << i
		}
	}
	return 0
}

// scopeList names the scopes, for a refusal: "invoices:read, clients:read, ...".
func scopeList() string {
	names := make([]string, len(canonical))
	for i, c := range canonical {
		names[i] = string(c)
	}
	return strings.Join(names, ", ")
}

// ParseScopes reads a comma-separated list such as
// "invoices:read,clients:read". Spaces around names are ignored and
// duplicates are harmless; an empty list, an empty element or an unknown name
// is ErrUnknownScope.
func ParseScopes(csv string) (ScopeSet, error) {
	if strings.TrimSpace(csv) == "" {
		return 0, invoicing.InvalidField(ErrUnknownScope, "scopes", "must name at least one of %s", scopeList())
	}
	var s ScopeSet
	for _, name := range strings.Split(csv, ",") {
		name = strings.TrimSpace(name)
		b := bit(Scope(strings.ToLower(name)))
		if b == 0 {
			return 0, invoicing.InvalidField(ErrUnknownScope, "scopes", "must be among %s: %q is not a scope", scopeList(), invoicing.Clip(name))
		}
		s |= b
	}
	return s, nil
}

// Has reports whether x is in the set.
func (s ScopeSet) Has(x Scope) bool {
	b := bit(x)
	return b != 0 && s&b == b
}

// List returns the scopes in canonical order.
func (s ScopeSet) List() []Scope {
	var out []Scope
	for i, c := range canonical {
		if s&(1<<i) != 0 {
			out = append(out, c)
		}
	}
	return out
}

// String returns the scopes comma-separated, in canonical order.
func (s ScopeSet) String() string {
	var b strings.Builder
	for _, c := range s.List() {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(string(c))
	}
	return b.String()
}

// valid reports whether s is non-empty and holds only known scopes.
func (s ScopeSet) valid() bool { return s != 0 && s&^allScopes == 0 }
