package gateway

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/invoicing-ao/gateway/authz"
	"github.com/invoicing-ao/gateway/invoicing"
	"github.com/invoicing-ao/gateway/web"
)

// authenticate runs the API's checks in the order the OpenAPI document's
// Authentication guide states: key (401), company header (400: missing, or
// not a UUID), company binding and status (403), source network (403),
// scope (403). Once the key is verified its caller is recorded in the
// request state, also when a 400 or 403 follows: the access log, the span and
// the usage count of those refusals belong to the key's company, mode and key.
func (s *Server) authenticate(r *http.Request, st *web.State, scope authz.Scope) (authz.Key, error) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return authz.Key{}, &web.Error{Code: "missing_api_key", Detail: "Send the header Authorization: Bearer <API key>."}
	}
	tok, ok := web.Bearer(h)
	if !ok {
		return authz.Key{}, &web.Error{Code: "invalid_api_key", Detail: "The Authorization header must be: Bearer <API key>."}
	}
	// The client's address is worked out only if the key store asks: to
	// bound the lookups of keys it does not know, per source.
	key, err := s.keys.VerifyFrom(r.Context(), tok, st)
	if err != nil {
		return authz.Key{}, err
	}
	st.Identify(web.Caller{Company: key.CompanyID, Mode: key.Mode, KeyID: key.ID})
	return key, s.authorize(r, st, key, scope)
}

// authorize runs the checks after the key's: the company header, the
// key's company and the company's status, the source network, the scope.
func (s *Server) authorize(r *http.Request, st *web.State, key authz.Key, scope authz.Scope) error {
	company := strings.TrimSpace(r.Header.Get("X-Company-Id"))
	if company == "" {
		return &web.Error{Code: "missing_company_id", Detail: "Send the header X-Company-Id with your company's id."}
	}
	// A value that cannot be any company's id (a truncated UUID, a key
	// pasted in the wrong header) is a mistake in the request, not a
	// refusal; it is never echoed.
	company, ok := invoicing.CanonicalUUID(company)
	if !ok {
		return &web.Error{Code: "invalid_company_id", Detail: "The header X-Company-Id must be your company's id, a UUID.",
			Fields: []web.FieldError{{Field: "X-Company-Id", Message: "must be a UUID: 36 characters, hexadecimal digits and hyphens (8-4-4-4-12)"}}}
	}
	scopeErr := key.Authorize(company, scope)
	// Of the two refusals Authorize can give, the company comes first.
	if scopeErr != nil && web.Problem(scopeErr).Code == "company_mismatch" {
		return scopeErr
	}
	if err := s.checkCompany(r.Context(), key); err != nil {
		return err
	}
	// Before the scope: a caller outside the key's networks learns nothing
	// of what the key may do.
	if err := checkSource(st, key); err != nil {
		return err
	}
	if scopeErr != nil {
		return &web.Error{Code: "insufficient_scope", Err: scopeErr,
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
			return &web.Error{Code: "company_suspended", Detail: "The company is not active on this platform.", Err: err}
		}
		return err
	}
	if status != "active" {
		return &web.Error{Code: "company_suspended", Detail: "The company is suspended and may not use the API."}
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

// checkSource refuses a request of a key limited to some networks when it
// comes from elsewhere, or from an address that cannot be known. The answer
// names no network and no address: it tells nothing of the key's settings.
func checkSource(st *web.State, key authz.Key) error {
	if len(key.AllowedCIDRs) == 0 {
		return nil
	}
	addr := st.Addr() // the zero Addr when it cannot be known
	if !addr.IsValid() || !key.AllowsSource(addr) {
		return &web.Error{Code: "source_not_allowed", Detail: "This API key is not accepted from the network this request comes from."}
	}
	return nil
}
