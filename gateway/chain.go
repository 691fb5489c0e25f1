package gateway

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/julienschmidt/httprouter"
)

// handler is the gateway's handler type: it returns what it answers, or an
// error, and writes nothing itself. One layer of the chain (writeAnswers)
// writes every answer and every problem; the layers outside it receive the
// written answer and the problem as return values, so that what a request
// ended with is known without any layer reporting it on the side.
type handler func(w http.ResponseWriter, r *http.Request) (answer, error)

// layer wraps a handler in one concern of the chain.
type layer func(handler) handler

// listener names the two listeners, which share most of the chain.
type listener uint8

const (
	public listener = 1 << iota // the API, the developer portal, health
	admin                       // health, metrics, and the admin package's routes (mount.go)
	both   = public | admin
)

// chain is the middleware of both listeners, outermost first, and why in
// that order:
//   - withRequestID: every later layer, error bodies and logs need the id;
//   - withTelemetry (public): the span, metrics and usage of every request,
//     rejections included; inside withRequestID so the id is on the span,
//     outside accessLog so the log line carries the trace id;
//   - accessLog: sees the final status and problem of everything inside,
//     panics included;
//   - writeAnswers: the one place that writes answers and problems; every
//     layer inside it returns instead of writing;
//   - withRecover: inside the writer, so a panic is answered (and logged) as
//     the 500 it became;
//   - withSecurityHeaders: on every answer, errors and 404s included;
//   - withFraming: a request whose length was ambiguous (both
//     Content-Length and Transfer-Encoding) is refused, its connection
//     closed, before any other work (framing.go);
//   - withAdminHost (admin): a request for a name that is not the admin
//     listener's (DNS rebinding) is refused before anything else;
//   - withHeaderLimit: a head over 16 KiB is refused before any work, in
//     the API's error format (net/http's own, higher cut-off is plain text);
//   - withBodyLimit: no body is read past 64 KiB, whoever reads it;
//   - withCORS (public): answers preflights (which carry no key) before the
//     router and authentication, and marks answers readable by listed
//     origins;
//   - then the router, and per API route: authenticate (key, company, scope)
//     before the rate limit, so that unauthenticated floods cannot spend a
//     company's budget, then the handler.
func (s *Server) chain(l listener, routed func(method string, u *url.URL) bool) []layer {
	all := []struct {
		on listener
		l  layer
	}{
		{both, withRequestID},
		{public, s.withTelemetry},
		{both, s.accessLog},
		{both, writeAnswers},
		{both, withRecover},
		{both, withSecurityHeaders},
		{both, withFraming},
		{admin, s.withAdminHost},
		{both, withHeaderLimit},
		{both, withBodyLimit},
		{public, withCORS(s.cors, routed)},
	}
	var out []layer
	for _, e := range all {
		if e.on&l != 0 {
			out = append(out, e.l)
		}
	}
	return out
}

// build wraps the router in the listener's chain and returns the listener's
// http.Handler.
func (s *Server) build(l listener, rt *routes) http.Handler {
	h := rt.serve
	layers := s.chain(l, rt.routed)
	for i := len(layers) - 1; i >= 0; i-- {
		h = layers[i](h)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = h(w, r) })
}

// routes is a listener's route table: httprouter matches method and path,
// the gateway's handlers answer. No redirects (an API answers the path it was
// given or 404), problem+json for unknown routes and methods.
type routes struct{ r *httprouter.Router }

// routeHandler is a routed handler: a handler with the path's parameters.
type routeHandler func(w http.ResponseWriter, r *http.Request, p httprouter.Params) (answer, error)

// newRoutes makes a route table; detail, when set, is the detail of its
// 404s for a path (routeHint), which it must not echo: callers paste keys
// and names into it.
func newRoutes(detail func(path string) string) *routes {
	r := httprouter.New()
	r.RedirectTrailingSlash = false
	r.RedirectFixedPath = false
	r.HandleOPTIONS = false // preflights are withCORS's
	r.NotFound = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d := "No route matches this method and path."
		if detail != nil {
			d = detail(r.URL.Path)
		}
		w.(*slot).err = &Error{Code: "route_not_found", Detail: d}
	})
	r.MethodNotAllowed = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		allow := w.Header().Get("Allow")
		w.(*slot).err = &Error{Code: "method_not_allowed", Detail: "Method " + r.Method + " is not allowed here; allowed: " + allow + ".", Allow: allow}
	})
	return &routes{r: r}
}

// handle registers h for method and path under the route name route (the
// name logs, spans and metrics use).
func (rt *routes) handle(method, path, route string, h routeHandler) {
	rt.r.Handle(method, path, func(w http.ResponseWriter, r *http.Request, p httprouter.Params) {
		stateFrom(r.Context()).Route = route
		sl := w.(*slot)
		if sl.escaped {
			for i := range p {
				p[i].Value, _ = url.PathUnescape(p[i].Value) // escaped by routingPath
			}
		}
		sl.ans, sl.err = h(sl.ResponseWriter, r, p)
	})
}

// slot carries a routed handler's result back out of httprouter, whose
// handlers return nothing. It lives only between serve and the handler.
type slot struct {
	http.ResponseWriter
	ans     answer
	err     error
	escaped bool // the path was matched in routingPath's escaped form
}

// serve is the innermost handler of the chain: the routed handler's result.
func (rt *routes) serve(w http.ResponseWriter, r *http.Request) (answer, error) {
	// The request's record holds the slot: httprouter's interface would
	// move one of serve's own to the heap.
	st := stateFrom(r.Context())
	st.slot = slot{ResponseWriter: w}
	sl := &st.slot
	if path, escaped := routingPath(r.URL); escaped {
		u := *r.URL
		u.Path, u.RawPath = path, ""
		r = r.WithContext(r.Context()) // a shallow copy, to give it u
		r.URL, sl.escaped = &u, true
	}
	rt.r.ServeHTTP(sl, r)
	return sl.ans, sl.err
}

// routingPath is the path the router matches: u.Path, unless a segment holds
// an escaped slash (%2F). net/http decodes it into a separator, which made
// GET /invoices/a%2Fb two segments, no route and a 404 route_not_found
// without the operation's headers, where the API promises not_found for any
// id. Such a path is matched as its segments were sent, each decoded and
// then escaped again ("%" and "/" only), so that a segment stays one; handle
// unescapes the parameters.
func routingPath(u *url.URL) (path string, escaped bool) {
	if u.RawPath == "" || !strings.Contains(strings.ToUpper(u.RawPath), "%2F") {
		return u.Path, false
	}
	segs := strings.Split(u.RawPath, "/")
	for i, s := range segs {
		d, err := url.PathUnescape(s)
		if err != nil {
			return u.Path, false // net/http accepted the path, so this cannot happen
		}
		segs[i] = segmentEscaper.Replace(d)
	}
	return strings.Join(segs, "/"), true
}

var segmentEscaper = strings.NewReplacer("%", "%25", "/", "%2F")

// routed reports whether method and the request's path name an API operation
// (GET or POST) of the table; CORS preflights are answered only for those.
func (rt *routes) routed(method string, u *url.URL) bool {
	path, _ := routingPath(u)
	h, _, _ := rt.r.Lookup(method, path)
	return h != nil && (method == http.MethodGet || method == http.MethodPost)
}
