package gateway

import (
	"encoding/json"
	"net/http"

	"github.com/julienschmidt/httprouter"

	"github.com/invoicing-ao/gateway/gateway/apidocs"
)

// The admin listener, and the kit through which another package (admin)
// mounts its routes on it. A mounted route answers as this package's own
// handlers do: it returns an Answer or an error, and writeAnswers writes
// either, the error as a problem from the one table (problem.go), behind the
// admin listener's chain (chain.go). The kit adapts at its edge and adds
// nothing to the public listener's path.

// AdminHandler is the admin listener's handler: this instance's health,
// readiness and metrics, and the routes mount registers (the admin API, its
// console and the runtime profiles: admin.Service.Handler). It is never
// mounted on the public listener. A nil mount mounts nothing.
func (s *Server) AdminHandler(mount func(*Router)) http.Handler {
	rt := newRoutes(nil)
	rt.handle(http.MethodGet, "/healthz", "GET /healthz", s.healthz)
	rt.handle(http.MethodGet, "/readyz", "GET /readyz", s.readyz)
	// No token for /metrics: scrapers need no power over keys, and the
	// metrics hold no secret and no company data.
	rt.handle(http.MethodGet, "/metrics", "GET /metrics", func(http.ResponseWriter, *http.Request, httprouter.Params) (answer, error) {
		return answer{serve: s.metrics.handler()}, nil
	})
	if mount != nil {
		mount(&Router{rt: rt})
	}
	return s.build(admin, rt)
}

// Router registers routes on the admin listener.
type Router struct{ rt *routes }

// Params are a route's path parameters (":id"), unescaped.
type Params = httprouter.Params

// RouteFunc is a mounted route: it returns what it answers, or an error (an
// *Error, or an adapter's error that carries its kind and code), and writes
// nothing itself.
type RouteFunc func(r *http.Request, p Params) (Answer, error)

// Answer is what a mounted route answers when it does not fail.
type Answer struct {
	Status   int    // zero means 200
	Body     any    // written as JSON; nil means no body
	Location string // the Location header, for a created resource
	// Serve writes an answer of its own kind (files with validators,
	// profiles); Body and Location are then unused.
	Serve http.Handler
}

// Handle registers h for method and path (httprouter's patterns); logs,
// spans and metrics name the route "METHOD path".
func (rt *Router) Handle(method, path string, h RouteFunc) {
	rt.rt.handle(method, path, method+" "+path, func(_ http.ResponseWriter, r *http.Request, p httprouter.Params) (answer, error) {
		a, err := h(r, p)
		return answer{status: a.Status, body: a.Body, location: a.Location, serve: a.Serve}, err
	})
}

// ReadJSONBody reads a request's JSON object as the public API's creates
// read theirs: application/json (UTF-8) only, at most 64 KiB. It returns
// the known members (the first of a repeated one) and an error for each
// unknown or repeated member; the caller adds the errors of the members it
// checks and refuses the body with all of them at once. err is a body that
// is not one JSON object (or not JSON, too large...): nothing to check.
func ReadJSONBody(r *http.Request, known []string) (members map[string]json.RawMessage, fields []FieldError, err error) {
	return readJSONBody(r, known)
}

// StringMember reads an optional string member of m: absent and null are
// "not given"; any other JSON type adds a FieldError to fields.
func StringMember(m map[string]json.RawMessage, name string, fields *[]FieldError) (string, bool) {
	return stringMember(m, name, fields)
}

// Bearer extracts the token of an "Authorization: Bearer <token>" header
// (the scheme in any letter case); false when the header is anything else.
func Bearer(header string) (string, bool) { return bearer(header) }

// Query is a query string read strictly, as the public API reads its own:
// every parameter known and given once, else an invalid_parameter naming it.
type Query struct{ q *query }

// ParseQuery reads raw (URL.RawQuery) against the known parameters.
func ParseQuery(raw string, known ...string) Query { return Query{parseQuery(raw, known...)} }

// Get returns a parameter's value and whether it was given.
func (q Query) Get(name string) (string, bool) { return q.q.get(name) }

// Int reads an optional integer in [lo, hi]; def when it is not given, and
// a failure recorded when it is out of range.
func (q Query) Int(name string, def, lo, hi int) int { return q.q.intParam(name, def, lo, hi) }

// Fail records that field is invalid, and why.
func (q Query) Fail(field, msg string) { q.q.fail(field, msg) }

// Err is the invalid_parameter error of every failure recorded, or nil.
func (q Query) Err() error { return q.q.err() }

// FileHandler serves an embedded file with validators (ETag, 304), gzip
// when the client accepts it, and the file's own Cache-Control and CSP, as
// the developer portal's files are served.
func FileHandler(f *apidocs.File) http.Handler { return serveDocFile(f) }
