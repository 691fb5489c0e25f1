package web

import (
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/julienschmidt/httprouter"
)

// handler is the chain's handler type: it returns what it answers, or an
// error, and writes nothing itself. One layer of the chain (writeAnswers)
// writes every answer and every problem; the layers outside it receive the
// written answer and the problem as return values, so that what a request
// ended with is known without any layer reporting it on the side.
type handler func(w http.ResponseWriter, r *http.Request) (Answer, error)

// layer wraps a handler in one concern of the chain.
type layer func(handler) handler

// Config is what a listener's chain does beside its routes. The zero
// Config is the chain every listener has (request id, access log, the
// answer writer, recovery, security headers, framing, header and body
// limits); each field adds to it.
type Config struct {
	Logger *slog.Logger     // the access log's; nil means slog.Default()
	Now    func() time.Time // nil means time.Now
	// Telemetry gives every request a span, its count and latency in the
	// metrics, and its caller's usage count; nil means none (the admin
	// listener, whose scrapes and calls are not the API's traffic).
	Telemetry *Telemetry
	// CORSAllowedOrigins are the other origins whose browser code may call
	// the listener's GET and POST routes (canonical, see invoicing.ParseOrigins);
	// empty means none.
	CORSAllowedOrigins []string
	// HostCheck refuses (421) a request whose Host is not an IP address, a
	// loopback name or one of Hosts, before any route (host.go): the
	// admin listener, which browsers must not reach by a rebound name.
	// Hosts are invoicing.ParseHosts's; empty means none.
	HostCheck bool
	Hosts     []string
	// TrustedProxies are the networks of the proxies in front of the
	// listener whose X-Forwarded-For is believed (State.Addr); empty
	// means none: the client is the connection's peer.
	TrustedProxies []netip.Prefix
	// RouteNotFound is the detail of a 404 route_not_found for a path, which
	// it must not echo (callers paste keys and names into paths); nil means
	// "No route matches this method and path."
	RouteNotFound func(path string) string
	// Answers is how answers and problems are written (answer.go).
	Answers Answers
}

// Listener is a listener's handler: the routes each of register adds, in
// the chain cfg describes.
func Listener(cfg Config, register ...func(*Router)) http.Handler {
	rt := newRouter(cfg.RouteNotFound)
	for _, f := range register {
		f(rt)
	}
	c := newChain(cfg)
	h := rt.serve
	layers := c.layers(rt.routed)
	for i := len(layers) - 1; i >= 0; i-- {
		h = layers[i](h)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = h(w, r) })
}

// chain is a listener's Config, its defaults applied.
type chain struct {
	Config
	tel *telemetry // nil: no telemetry layer
}

func newChain(cfg Config) *chain {
	c := &chain{Config: cfg}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if cfg.Telemetry != nil {
		c.tel = newTelemetry(*cfg.Telemetry)
	}
	return c
}

// layers are the chain's middleware, outermost first, and why in that
// order:
//   - withRequestID: every later layer, error bodies and logs need the id;
//   - withTelemetry (Config.Telemetry): the span, metrics and usage of
//     every request, rejections included; inside withRequestID so the id is
//     on the span, outside accessLog so the log line carries the trace id;
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
//   - withHost (Config.HostCheck): a request for a name that is not the
//     listener's (DNS rebinding) is refused before anything else;
//   - withHeaderLimit: a head over 16 KiB is refused before any work, in
//     the API's error format (net/http's own, higher cut-off is plain text);
//   - withBodyLimit: no body is read past 64 KiB, whoever reads it;
//   - withCORS (Config.CORSAllowedOrigins): answers preflights (which carry
//     no key) before the router and authentication, and marks answers
//     readable by listed origins;
//   - then the router, and the route's handler (the public API's
//     authenticates, then applies the rate limit: gateway/routes.go).
func (c *chain) layers(routed func(method string, u *url.URL) bool) []layer {
	out := []layer{c.withRequestID}
	if c.tel != nil {
		out = append(out, c.withTelemetry)
	}
	out = append(out, c.accessLog, c.writeAnswers, withRecover, withSecurityHeaders, withFraming)
	if c.HostCheck {
		out = append(out, c.withHost)
	}
	return append(out, withHeaderLimit, withBodyLimit, withCORS(c.CORSAllowedOrigins, routed))
}

// Router is a listener's route table: httprouter matches method and path,
// the routes answer. No redirects (an API answers the path it was given or
// 404), problem+json for unknown routes and methods.
type Router struct{ r *httprouter.Router }

// Params are a route's path parameters (":id"), unescaped.
type Params = httprouter.Params

// RouteFunc is a route: it returns what it answers, or an error (an
// *Error, or an adapter's error that carries its kind and code), and
// writes nothing itself (headers beside the answer: State.SetHeader).
type RouteFunc func(r *http.Request, p Params) (Answer, error)

// newRouter makes a route table; detail, when set, is the detail of its
// 404s for a path (Config.RouteNotFound).
func newRouter(detail func(path string) string) *Router {
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
	return &Router{r: r}
}

// Handle registers h for method and path (httprouter's patterns); logs,
// spans and metrics name the route "METHOD path".
func (rt *Router) Handle(method, path string, h RouteFunc) {
	rt.HandleAs(method, path, method+" "+path, h)
}

// HandleAs is Handle with the route's name for logs, spans and metrics;
// an empty name is counted as "unmatched", as a path no route matched.
func (rt *Router) HandleAs(method, path, name string, h RouteFunc) {
	rt.r.Handle(method, path, func(w http.ResponseWriter, r *http.Request, p httprouter.Params) {
		StateOf(r.Context()).route = name
		sl := w.(*slot)
		if sl.escaped {
			for i := range p {
				p[i].Value, _ = url.PathUnescape(p[i].Value) // escaped by routingPath
			}
		}
		sl.ans, sl.err = h(r, p)
	})
}

// slot carries a routed handler's result back out of httprouter, whose
// handlers return nothing. It lives only between serve and the handler.
type slot struct {
	http.ResponseWriter
	ans     Answer
	err     error
	escaped bool // the path was matched in routingPath's escaped form
}

// serve is the innermost handler of the chain: the routed handler's result.
func (rt *Router) serve(w http.ResponseWriter, r *http.Request) (Answer, error) {
	// The request's record holds the slot: httprouter's interface would
	// move one of serve's own to the heap.
	st := StateOf(r.Context())
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
// then escaped again ("%" and "/" only), so that a segment stays one;
// HandleAs unescapes the parameters.
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

// routed reports whether method and the request's path name an operation
// (GET or POST) of the table; CORS preflights are answered only for those.
func (rt *Router) routed(method string, u *url.URL) bool {
	path, _ := routingPath(u)
	h, _, _ := rt.r.Lookup(method, path)
	return h != nil && (method == http.MethodGet || method == http.MethodPost)
}
