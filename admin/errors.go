package admin

import "github.com/invoicing-ao/gateway/invoicing"

// The admin API's own codes: the errors it makes itself about the admin
// token, company ids and actors. They are defined here rather than in web's
// table so that a new one touches no file of web: web answers a *web.Error
// of a defined code with its kind's status and its title, and the errors
// guide and the OpenAPI document's enum list every defined code of the
// binary, which links admin. Each error's detail is its own
// (the company it names). audit_unavailable and usage_unavailable, answered
// when no audit log or usage counter is configured, are audit's and usage's.
// change_not_replicated (503: Redis's replicas did not confirm a change in
// time) is defined by each package whose changes wait for them (authz,
// tenants, events), with one kind and title and a detail that says
// what became of that change and to repeat it once Redis is healthy; the
// console puts it first (console/ui/core.js).
var (
	// No admin token sent, and one sent that is not the gateway's: apart,
	// as the public API's missing_api_key and invalid_api_key are, so that
	// a caller who sent one is not told to send one.
	_ = invoicing.Define(invoicing.Error{Kind: invoicing.Unauthenticated, Code: "unauthorized_admin", Title: "Admin token required", Message: "admin: no admin token"})
	_ = invoicing.Define(invoicing.Error{Kind: invoicing.Unauthenticated, Code: "invalid_admin_token", Title: "Wrong admin token", Message: "admin: wrong admin token"})
	_ = invoicing.Define(invoicing.Error{Kind: invoicing.Unavailable, Code: "admin_disabled", Title: "Admin API disabled", Message: "admin: no admin token configured"})
	_ = invoicing.Define(invoicing.Error{Kind: invoicing.Limited, Code: "admin_token_throttled", Title: "Too many wrong admin tokens", Message: "admin: wrong admin tokens throttled"})
	_ = invoicing.Define(invoicing.Error{Kind: invoicing.Unprocessable, Code: "unknown_company", Title: "Unknown company", Message: "admin: unknown company"})
	// A change's X-Actor header: missing, or not a name the audit log keeps.
	_ = invoicing.Define(invoicing.Error{Kind: invoicing.Invalid, Code: "missing_actor", Title: "Missing X-Actor header", Message: "admin: no X-Actor"})
	_ = invoicing.Define(invoicing.Error{Kind: invoicing.Invalid, Code: "invalid_actor", Title: "Invalid X-Actor header", Message: "admin: invalid X-Actor"})
	_ = invoicing.Define(invoicing.Error{Kind: invoicing.Unavailable, Code: "change_not_audited", Title: "Change made but not audited", Message: "admin: the change is made but the audit log did not record it"})
)
