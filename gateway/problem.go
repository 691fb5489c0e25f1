package gateway

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/invoicing-ao/gateway/audit"
	"github.com/invoicing-ao/gateway/authz"
	"github.com/invoicing-ao/gateway/backend"
	"github.com/invoicing-ao/gateway/invoicing"
	"github.com/invoicing-ao/gateway/tenants"
	"github.com/invoicing-ao/gateway/usage"
)

// Error is the gateway's one error type: what the caller is told. Every
// failure is turned into one (by problemFor) and written by writeProblem, so
// statuses, codes and bodies are decided in this file only.
type Error struct {
	Code       string       // stable, machine-readable; a key of problemCodes
	Detail     string       // human-readable, safe to show the caller
	Fields     []FieldError // validation errors, when Code is invalid_*
	RetryAfter time.Duration
	Allow      string            // for method_not_allowed
	Checks     map[string]string // for not_ready: each dependency's state
	Err        error             // cause, logged, never shown
}

// FieldError names one invalid input and why.
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

func (e *Error) Error() string {
	if e.Err != nil {
		return e.Code + ": " + e.Detail + ": " + e.Err.Error()
	}
	return e.Code + ": " + e.Detail
}

func (e *Error) Unwrap() error { return e.Err }

// Status is the HTTP status the API answers e with.
func (e *Error) Status() int { return problemCodes[e.Code].Status }

// problemCode is one row of the table of errors the API can answer with.
type problemCode struct {
	Status int
	Title  string
}

// problemCodes is every code the API documents. Tests check each is produced.
var problemCodes = map[string]problemCode{
	"invalid_parameter":          {http.StatusBadRequest, "Invalid query parameter"},
	"invalid_body":               {http.StatusBadRequest, "Invalid request body"},
	"missing_company_id":         {http.StatusBadRequest, "Missing X-Company-Id header"},
	"missing_api_key":            {http.StatusUnauthorized, "Missing API key"},
	"invalid_api_key":            {http.StatusUnauthorized, "Invalid API key"},
	"expired_api_key":            {http.StatusUnauthorized, "Expired API key"},
	"company_mismatch":           {http.StatusForbidden, "Key does not belong to this company"},
	"company_suspended":          {http.StatusForbidden, "Company suspended"},
	"insufficient_scope":         {http.StatusForbidden, "Insufficient scope"},
	"source_not_allowed":         {http.StatusForbidden, "Source network not allowed"},
	"not_found":                  {http.StatusNotFound, "Resource not found"},
	"route_not_found":            {http.StatusNotFound, "Route not found"},
	"method_not_allowed":         {http.StatusMethodNotAllowed, "Method not allowed"},
	"nif_conflict":               {http.StatusConflict, "NIF already registered"},
	"idempotency_in_progress":    {http.StatusConflict, "Request with this Idempotency-Key in progress"},
	"idempotency_key_reused":     {http.StatusUnprocessableEntity, "Idempotency-Key reused"},
	"body_too_large":             {http.StatusRequestEntityTooLarge, "Request body too large"},
	"headers_too_large":          {http.StatusRequestHeaderFieldsTooLarge, "Request headers too large"},
	"unsupported_media_type":     {http.StatusUnsupportedMediaType, "Unsupported media type"},
	"rate_limit_live":            {http.StatusTooManyRequests, "LIVE rate limit exceeded"},
	"rate_limit_test":            {http.StatusTooManyRequests, "TEST rate limit exceeded"},
	"concurrency_limit":          {http.StatusTooManyRequests, "Too many requests in flight"},
	"database_unavailable":       {http.StatusServiceUnavailable, "Database unavailable"},
	"authentication_unavailable": {http.StatusServiceUnavailable, "Key verification unavailable"},
	"internal_error":             {http.StatusInternalServerError, "Internal server error"},
	"unauthorized_admin":         {http.StatusUnauthorized, "Admin token required"},
	"admin_disabled":             {http.StatusServiceUnavailable, "Admin API disabled"},
	"key_limit_reached":          {http.StatusConflict, "Active key limit reached"},
	"key_not_rollable":           {http.StatusConflict, "Key cannot be rolled"},
	"unknown_company":            {http.StatusUnprocessableEntity, "Unknown company"},
	"not_ready":                  {http.StatusServiceUnavailable, "Not ready"},
	"usage_unavailable":          {http.StatusServiceUnavailable, "Usage unavailable"},
	"audit_unavailable":          {http.StatusServiceUnavailable, "Audit log unavailable"},
}

// problemFor maps any error to the Error the caller sees. It is the one place
// that knows which package's error means which status.
func problemFor(err error) *Error {
	p := problemOf(err)
	if _, ok := problemCodes[p.Code]; !ok {
		return &Error{Code: "internal_error", Detail: "An internal error occurred.", Err: err}
	}
	return p
}

func problemOf(err error) *Error {
	var e *Error
	switch {
	case errors.As(err, &e):
		return e
	case errors.Is(err, backend.ErrNotFound), errors.Is(err, authz.ErrNotFound):
		return &Error{Code: "not_found", Detail: "No such resource.", Err: err}
	case errors.Is(err, backend.ErrNIFConflict):
		return &Error{Code: "nif_conflict", Detail: "A client with this NIF already exists in the company.", Err: err}
	case errors.Is(err, backend.ErrCircuitOpen):
		// Refused without asking the database: retry when the breaker lets
		// its next probe through, and never sooner than in 1 s (a probe may
		// be in flight already).
		retry := time.Second
		var open *backend.CircuitOpenError
		if errors.As(err, &open) {
			retry = max(open.RetryAfter(), time.Second)
		}
		return &Error{Code: "database_unavailable", Detail: "The database is unavailable; retry later.", RetryAfter: retry, Err: err}
	case errors.Is(err, backend.ErrUnavailable):
		return &Error{Code: "database_unavailable", Detail: "The database is unavailable; retry later.", RetryAfter: time.Second, Err: err}
	case errors.Is(err, backend.ErrInvalid):
		return &Error{Code: "invalid_parameter", Detail: "Invalid parameter.", Err: err}
	case errors.Is(err, authz.ErrInvalidKey):
		return &Error{Code: "invalid_api_key", Detail: "The API key is malformed, unknown or revoked.", Err: err}
	case errors.Is(err, authz.ErrExpiredKey):
		return &Error{Code: "expired_api_key", Detail: "The API key has expired; use the key that replaced it.", Err: err}
	case errors.Is(err, authz.ErrUnavailable):
		return &Error{Code: "authentication_unavailable", Detail: "The key cannot be verified right now; retry later. Your key was not rejected.", RetryAfter: time.Second, Err: err}
	case errors.Is(err, authz.ErrWrongCompany):
		return &Error{Code: "company_mismatch", Detail: "The API key does not belong to the company in X-Company-Id.", Err: err}
	case errors.Is(err, authz.ErrMissingScope):
		return &Error{Code: "insufficient_scope", Detail: "The API key lacks the scope this operation needs.", Err: err}
	case errors.Is(err, authz.ErrKeyLimit):
		return &Error{Code: "key_limit_reached", Detail: "The company already has the maximum number of active keys.", Err: err}
	case errors.Is(err, authz.ErrRollLimit):
		return &Error{Code: "key_limit_reached", Detail: "The company already has the maximum number of rolled keys in their overlap; revoke one, or roll with no overlap.", Err: err}
	case errors.Is(err, authz.ErrNotRollable):
		return &Error{Code: "key_not_rollable", Detail: err.Error(), Err: err}
	case errors.Is(err, authz.ErrUnknownScope), errors.Is(err, invoicing.ErrInvalidMode),
		errors.Is(err, invoicing.ErrInvalidCompany), errors.Is(err, authz.ErrInvalidName),
		errors.Is(err, authz.ErrInvalidCIDR), errors.Is(err, authz.ErrInvalidExpiry),
		errors.Is(err, authz.ErrInvalidOverlap), errors.Is(err, tenants.ErrInvalidLimit):
		return &Error{Code: "invalid_body", Detail: err.Error(), Err: err}
	case errors.Is(err, audit.ErrUnavailable):
		return &Error{Code: "audit_unavailable", Detail: "The audit log cannot be read right now; retry later.", RetryAfter: time.Second, Err: err}
	case errors.Is(err, usage.ErrUnavailable):
		return &Error{Code: "usage_unavailable", Detail: "Usage cannot be read right now; retry later.", RetryAfter: time.Second, Err: err}
	case errors.Is(err, tenants.ErrBusy):
		return &Error{Code: "concurrency_limit", Detail: "Too many requests of this company are in flight; retry shortly.", RetryAfter: time.Second, Err: err}
	case errors.Is(err, context.DeadlineExceeded):
		return &Error{Code: "database_unavailable", Detail: "The request timed out; retry later.", RetryAfter: time.Second, Err: err}
	default:
		return &Error{Code: "internal_error", Detail: "An internal error occurred.", Err: err}
	}
}

// problemBody is the RFC 9457 body.
type problemBody struct {
	Type      string            `json:"type"`
	Title     string            `json:"title"`
	Status    int               `json:"status"`
	Detail    string            `json:"detail"`
	Code      string            `json:"code"`
	RequestID string            `json:"requestId"`
	Errors    []FieldError      `json:"errors,omitempty"`
	Checks    map[string]string `json:"checks,omitempty"`
}

// problemTypeBase is where each code is explained (the portal's errors guide).
const problemTypeBase = "/api/docs/errors#"

// ceilSeconds rounds up to whole seconds, at least 1: a client told to retry
// after 0 seconds would retry at once and be refused again.
func ceilSeconds(d time.Duration) int {
	s := int((d + time.Second - 1) / time.Second)
	if s < 1 {
		return 1
	}
	return s
}

// Problem is what the caller would be told of err: the CLI uses it to speak
// the same language as the API.
func Problem(err error) *Error { return problemFor(err) }
