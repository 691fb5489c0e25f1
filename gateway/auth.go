package gateway

import (
	"context"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/invoicing-ao/gateway/authz"
	"github.com/invoicing-ao/gateway/invoicing"
)

// bearer extracts the token of an "Authorization: Bearer <token>" header. The
// scheme is case-insensitive (RFC 9110); anything else is malformed.
func bearer(h string) (string, bool) {
	const scheme = "bearer "
	if len(h) <= len(scheme) || !strings.EqualFold(h[:len(scheme)], scheme) {
		return "", false
	}
	tok := strings.TrimLeft(h[len(scheme):], " ")
	if tok == "" || strings.ContainsAny(tok, " \t") {
		return "", false
	}
	return tok, true
}

// requestSource is a request's client address as clientAddr decides it
// (trusted proxies included), for the key store's bound of lookups of
// unknown keys; an address that cannot be known is the zero Addr, whose
// callers share one bound.
type requestSource struct {
	r       *http.Request
	proxies []netip.Prefix
}

func (s *requestSource) Addr() netip.Addr {
	a, _ := clientAddr(s.r.RemoteAddr, s.r.Header.Values("X-Forwarded-For"), s.proxies)
	return a
}

// authenticate runs the API's checks in the order the OpenAPI document's
// Authentication guide states: key (401), company header (400: missing, or
// not a UUID), company binding and status (403), source network (403),
// scope (403). Once the key is verified it is recorded in the
// request state, also when a 400 or 403 follows: the access log, the span and
// the usage count of those refusals belong to the key's company, mode and key.
func (s *Server) authenticate(r *http.Request, st *reqState, scope authz.Scope) error {
	h := r.Header.Get("Authorization")
	if h == "" {
		return &Error{Code: "missing_api_key", Detail: "Send the header Authorization: Bearer <API key>."}
	}
	tok, ok := bearer(h)
	if !ok {
		return &Error{Code: "invalid_api_key", Detail: "The Authorization header must be: Bearer <API key>."}
	}
	// The client's address is worked out only if the key store asks: to
	// bound the lookups of keys it does not know, per source.
	st.src = requestSource{r: r, proxies: s.proxies}
	key, err := s.keys.VerifyFrom(r.Context(), tok, &st.src)
	if err != nil {
		return err
	}
	st.Key = key
	st.Authed = true
	company := strings.TrimSpace(r.Header.Get("X-Company-Id"))
	if company == "" {
		return &Error{Code: "missing_company_id", Detail: "Send the header X-Company-Id with your company's id."}
	}
	// A value that cannot be any company's id (a truncated UUID, a key
	// pasted in the wrong header) is a mistake in the request, not a
	// refusal; it is never echoed.
	company, ok = invoicing.CanonicalUUID(company)
	if !ok {
		return &Error{Code: "invalid_company_id", Detail: "The header X-Company-Id must be your company's id, a UUID.",
			Fields: []FieldError{{"X-Company-Id", "must be a UUID: 36 characters, hexadecimal digits and hyphens (8-4-4-4-12)"}}}
	}
	scopeErr := key.Authorize(company, scope)
	// Of the two refusals Authorize can give, the company comes first.
	if scopeErr != nil && problemOf(scopeErr).Code == "company_mismatch" {
		return scopeErr
	}
	if err := s.checkCompany(r.Context(), key); err != nil {
		return err
	}
	// Before the scope: a caller outside the key's networks learns nothing
	// of what the key may do.
	if err := s.checkSource(r, key); err != nil {
		return err
	}
	if scopeErr != nil {
		return &Error{Code: "insufficient_scope", Err: scopeErr,
			Detail: "This operation needs the scope " + string(scope) + ", which the API key lacks."}
	}
	return nil
}

// checkCompany refuses suspended companies, asking the key's database at most
// once per CompanyTTL per company.
func (s *Server) checkCompany(ctx context.Context, key authz.Key) error {
	status, err := s.companies.status(ctx, key.Mode, key.CompanyID, s.store(key.Mode))
	if err != nil {
		if invoicing.KindOf(err) == invoicing.NotFound {
			return &Error{Code: "company_suspended", Detail: "The company is not active on this platform.", Err: err}
		}
		return err
	}
	if status != "active" {
		return &Error{Code: "company_suspended", Detail: "The company is suspended and may not use the API."}
	}
	return nil
}

// companyCache remembers company statuses for a short time: a suspension is
// seen within the TTL, and the database is not asked on every request. Reads
// take no lock (sync.Map): every request reads it, and a read lock's shared
// counter would move between cores on each one.
type companyCache struct {
	ttl time.Duration
	now func() time.Time
	m   sync.Map // companyCacheKey → companyEntry
	n   atomic.Int64
}

type companyCacheKey struct {
	mode invoicing.Mode
	id   string
}

type companyEntry struct {
	status string
	at     time.Time
}

// maxCompanies bounds the cache; when full it starts over, which costs one
// query per company and keeps memory flat whatever callers send.
const maxCompanies = 100_000

func newCompanyCache(ttl time.Duration, now func() time.Time) *companyCache {
	return &companyCache{ttl: ttl, now: now}
}

func (c *companyCache) status(ctx context.Context, mode invoicing.Mode, id string, st Store) (string, error) {
	k := companyCacheKey{mode, id}
	now := c.now()
	v, ok := c.m.Load(k)
	var e companyEntry
	if ok {
		e = v.(companyEntry)
		if now.Sub(e.at) < c.ttl {
			return e.status, nil
		}
	}
	co, err := st.Company(ctx, id)
	if err != nil {
		if ok && invoicing.KindOf(err) == invoicing.Unavailable {
			// A database hiccup should fail the data call, not the status check
			// of a company we knew a moment ago.
			return e.status, nil
		}
		return "", err
	}
	if _, had := c.m.Swap(k, companyEntry{status: co.Status, at: now}); !had && c.n.Add(1) > maxCompanies {
		c.m.Clear()
		c.n.Store(0)
	}
	return co.Status, nil
}
