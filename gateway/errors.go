package gateway

import "github.com/invoicing-ao/gateway/invoicing"

// The public API's own codes: the errors this package makes itself about
// the key and company headers, the company's status, the key's networks and
// scope, the rate limit, Idempotency-Key and readiness. They are defined
// here, with their kinds, rather than in web's table, so that the HTTP
// layer knows no API: web answers a *web.Error of a defined code with its
// kind's status and its title, and the errors guide and the OpenAPI
// document's enum list every defined code of the binary. A code an adapter
// defines too (invalid_api_key, insufficient_scope: authz's) is defined
// alike.
var (
	_ = invoicing.Define(invoicing.Error{Kind: invoicing.Invalid, Code: "missing_company_id", Title: "Missing X-Company-Id header", Message: "gateway: no X-Company-Id"})
	_ = invoicing.Define(invoicing.Error{Kind: invoicing.Invalid, Code: "invalid_company_id", Title: "Invalid X-Company-Id header", Message: "gateway: X-Company-Id is not a UUID"})
	_ = invoicing.Define(invoicing.Error{Kind: invoicing.Unauthenticated, Code: "missing_api_key", Title: "Missing API key", Message: "gateway: no API key"})
	_ = invoicing.Define(invoicing.Error{Kind: invoicing.Unauthenticated, Code: "invalid_api_key", Title: "Invalid API key", Message: "gateway: malformed Authorization header"})
	_ = invoicing.Define(invoicing.Error{Kind: invoicing.Forbidden, Code: "company_suspended", Title: "Company suspended", Message: "gateway: company not active"})
	_ = invoicing.Define(invoicing.Error{Kind: invoicing.Forbidden, Code: "insufficient_scope", Title: "Insufficient scope", Message: "gateway: key lacks the scope"})
	_ = invoicing.Define(invoicing.Error{Kind: invoicing.Forbidden, Code: "source_not_allowed", Title: "Source network not allowed", Message: "gateway: source network not allowed"})
	_ = invoicing.Define(invoicing.Error{Kind: invoicing.Conflict, Code: "idempotency_in_progress", Title: "Request with this Idempotency-Key in progress", Message: "gateway: idempotent request running"})
	_ = invoicing.Define(invoicing.Error{Kind: invoicing.Unprocessable, Code: "idempotency_key_reused", Title: "Idempotency-Key reused", Message: "gateway: Idempotency-Key reused"})
	_ = invoicing.Define(invoicing.Error{Kind: invoicing.Limited, Code: "rate_limit_live", Title: "LIVE rate limit exceeded", Message: "gateway: LIVE rate limit exceeded"})
	_ = invoicing.Define(invoicing.Error{Kind: invoicing.Limited, Code: "rate_limit_test", Title: "TEST rate limit exceeded", Message: "gateway: TEST rate limit exceeded"})
	_ = invoicing.Define(invoicing.Error{Kind: invoicing.Unavailable, Code: "not_ready", Title: "Not ready", Message: "gateway: not ready"})
)
