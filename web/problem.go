package web

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/invoicing-ao/gateway/invoicing"
)

// Error is the HTTP layer's one error type: what the caller is told. Every
// failure is turned into one (by Answers.Problem) and written by
// writeProblem, so statuses, codes and bodies are decided in this file only.
type Error struct {
	Code       string       // stable, machine-readable; see lookupCode
	Detail     string       // human-readable, safe to show the caller
	Fields     []FieldError // validation errors, when Code is invalid_*
	RetryAfter time.Duration
	Allow      string            // for method_not_allowed
	Checks     map[string]string // for not_ready: each dependency's state
	// ExistingClientID, for an error that is an invoicing.ClientConflict
	// (nif_conflict): the caller's company's client that has the NIF (never
	// another company's).
	ExistingClientID string
	Err              error // cause, logged, never shown

	// An adapter's error brings its code's status (by its kind) and title;
	// this layer's own are looked up by code (lookupCode).
	status int
	title  string
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
func (e *Error) Status() int { return e.row().Status }

// row is e's status and title.
func (e *Error) row() ProblemCode {
	if e.status != 0 {
		return ProblemCode{e.status, e.title}
	}
	pc, _ := lookupCode(e.Code)
	return pc
}

// ProblemCode is one row of the table of errors the API can answer with:
// the status and title of a code.
type ProblemCode struct {
	Status int
	Title  string
}

// httpCodes are the codes of the errors this layer makes itself, on every
// listener: its checks of query strings, bodies, heads, routes and hosts,
// a request that timed out, and a fault. Every other code is defined
// where its errors are made, with its kind and title (invoicing.Define):
// the public API's (gateway/errors.go), the admin API's (admin/errors.go)
// and the adapters', so that a new one touches no file here; the errors
// guide and the document list every code the binary links. A code both
// this table and a definition have is the same row for both
// (TestCodesAgree).
var httpCodes = map[string]ProblemCode{
	"invalid_parameter":      {http.StatusBadRequest, "Invalid query parameter"},
	"invalid_body":           {http.StatusBadRequest, "Invalid request body"},
	"route_not_found":        {http.StatusNotFound, "Route not found"},
	"method_not_allowed":     {http.StatusMethodNotAllowed, "Method not allowed"},
	"body_too_large":         {http.StatusRequestEntityTooLarge, "Request body too large"},
	"headers_too_large":      {http.StatusRequestHeaderFieldsTooLarge, "Request headers too large"},
	"host_not_allowed":       {http.StatusMisdirectedRequest, "Host not served here"},
	"invalid_framing":        {http.StatusBadRequest, "Ambiguous request length"},
	"unsupported_media_type": {http.StatusUnsupportedMediaType, "Unsupported media type"},
	"database_unavailable":   {http.StatusServiceUnavailable, "Database unavailable"},
	"internal_error":         {http.StatusInternalServerError, "Internal server error"},
}

// kindStatus is the status of each kind of error.
var kindStatus = [...]int{
	invoicing.Internal:        http.StatusInternalServerError,
	invoicing.Invalid:         http.StatusBadRequest,
	invoicing.Unauthenticated: http.StatusUnauthorized,
	invoicing.Forbidden:       http.StatusForbidden,
	invoicing.NotFound:        http.StatusNotFound,
	invoicing.Conflict:        http.StatusConflict,
	invoicing.Unprocessable:   http.StatusUnprocessableEntity,
	invoicing.Limited:         http.StatusTooManyRequests,
	invoicing.Unavailable:     http.StatusServiceUnavailable,
}

// statusOf is k's status; 500 for a kind this table does not know.
func statusOf(k invoicing.Kind) int {
	if int(k) < len(kindStatus) {
		return kindStatus[k]
	}
	return http.StatusInternalServerError
}

// lookupCode is a code's status and title: this layer's own, else the one
// an adapter defined.
func lookupCode(code string) (ProblemCode, bool) {
	if pc, ok := httpCodes[code]; ok {
		return pc, true
	}
	if info, ok := invoicing.LookupCode(code); ok {
		return ProblemCode{statusOf(info.Kind), info.Title}, true
	}
	return ProblemCode{}, false
}

// ProblemCodes is every code the API can answer with: this layer's and the
// adapters'. The errors guide lists them; tests check the OpenAPI document
// names each.
func ProblemCodes() map[string]ProblemCode {
	all := make(map[string]ProblemCode, len(httpCodes))
	for _, info := range invoicing.Codes() {
		all[info.Code] = ProblemCode{statusOf(info.Kind), info.Title}
	}
	for code, pc := range httpCodes {
		all[code] = pc
	}
	return all
}

// Problem maps any error to the Error the caller sees. It is the one place
// that decides a status: by the code of this layer's errors, by the kind of
// an adapter's.
func (a Answers) Problem(err error) *Error {
	p := a.problemOf(err)
	if p.row().Status == 0 {
		return &Error{Code: "internal_error", Detail: "An internal error occurred.", Err: err}
	}
	return p
}

// retryAfterer is an error that knows when to retry (a database's open
// circuit breaker: when it lets its next probe through).
type retryAfterer interface{ RetryAfter() time.Duration }

func (a Answers) problemOf(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	// An adapter's error that says what it is; one that does not (no code,
	// or Internal) is a fault like any other: its text is never shown.
	var k *invoicing.Error
	if errors.As(err, &k) && k.Kind != invoicing.Internal && k.Code != "" {
		p := &Error{Code: k.Code, Detail: k.Detail, Err: err, status: statusOf(k.Kind), title: k.Title}
		var fe *invoicing.FieldError
		switch {
		case p.Detail != "":
		case errors.As(err, &fe): // an input refused, named: said once, in the caller's words
			p.Detail = fe.Field + " " + fe.Message + "."
			p.Fields = []FieldError{{fe.Field, fe.Message}}
		default: // the adapter's text is meant for the caller
			p.Detail = err.Error()
		}
		var held invoicing.ClientConflict
		if errors.As(err, &held) && held.ExistingClientID() != "" {
			// The caller's own client (the store looked in its company and
			// mode only): its id, and where to get it.
			id := held.ExistingClientID()
			p.ExistingClientID = id
			if a.APIPrefix != "" {
				p.Detail = strings.TrimSuffix(p.Detail, ".") + ": " + a.APIPrefix + "/clients/" + id + "."
			}
		}
		if k.Kind == invoicing.Unavailable || k.Kind == invoicing.Limited {
			// Never sooner than in 1 s: a client told 0 would retry at
			// once, and a breaker's probe may be in flight already.
			p.RetryAfter = time.Second
			var ra retryAfterer
			if errors.As(err, &ra) {
				p.RetryAfter = max(ra.RetryAfter(), time.Second)
			}
		}
		return p
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return &Error{Code: "database_unavailable", Detail: "The request timed out; retry later.", RetryAfter: time.Second, Err: err}
	}
	return &Error{Code: "internal_error", Detail: "An internal error occurred.", Err: err}
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
	// ExistingClientID is Error.ExistingClientID.
	ExistingClientID string `json:"existingClientId,omitempty"`
}

// problemTypeBase is where each code is explained (the portal's errors guide).
const problemTypeBase = "/api/docs/errors#"

// CeilSeconds rounds up to whole seconds, at least 1: a client told to
// retry after 0 seconds would retry at once and be refused again.
func CeilSeconds(d time.Duration) int {
	s := int((d + time.Second - 1) / time.Second)
	if s < 1 {
		return 1
	}
	return s
}

// Problem is what the caller would be told of err, on a listener that
// serves no API resource: the CLI uses it to speak the same language as
// the API.
func Problem(err error) *Error { return Answers{}.Problem(err) }
