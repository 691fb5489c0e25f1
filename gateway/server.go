package gateway

import (
	"context"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/julienschmidt/httprouter"
	"go.opentelemetry.io/otel/trace"

	"github.com/invoicing-ao/gateway/authz"
	"github.com/invoicing-ao/gateway/backend"
	"github.com/invoicing-ao/gateway/tenants"
)

// Store is one database's worth of API resources (backend.Store).
type Store interface {
	Company(ctx context.Context, id string) (backend.Company, error)
	ListInvoices(ctx context.Context, companyID string, f backend.InvoiceFilter) (backend.Page[backend.Invoice], error)
	GetInvoice(ctx context.Context, companyID, id string) (backend.Invoice, error)
	ListClients(ctx context.Context, companyID string, f backend.ClientFilter) (backend.Page[backend.Client], error)
	GetClient(ctx context.Context, companyID, id string) (backend.Client, error)
	CreateClient(ctx context.Context, companyID string, c backend.NewClient) (backend.Client, error)
	Ping(ctx context.Context) error
}

// Keys verifies API keys and, on the admin listener, manages them (authz.Keyring).
type Keys interface {
	Verify(ctx context.Context, secret string) (authz.Key, error)
	Create(ctx context.Context, nk authz.NewKey) (authz.Key, string, error)
	List(ctx context.Context, companyID string) ([]authz.Key, error)
	Get(ctx context.Context, keyID string) (authz.Key, error)
	Revoke(ctx context.Context, keyID string) (authz.Key, error)
	Ping(ctx context.Context) error
}

// Limiter decides admission and keeps per-company limits (tenants.Limiter).
type Limiter interface {
	Allow(ctx context.Context, companyID, mode string) (tenants.Decision, error)
	Limits(ctx context.Context, companyID string) (tenants.Limits, error)
	SetLimit(ctx context.Context, companyID, mode string, lim tenants.Limit) error
	ResetLimits(ctx context.Context, companyID string) error
}

// Guard caps requests in flight to the database (tenants.Guard).
type Guard interface {
	Acquire(ctx context.Context, companyID string) (release func(), err error)
}

// Config holds the server's dependencies.
type Config struct {
	Live, Test Store   // required: the live and the sandbox database
	Keys       Keys    // required
	Limiter    Limiter // required
	Guard      Guard   // nil means no cap on requests in flight
	// AdminToken protects the admin API; empty disables it (every admin call
	// answers 503), so a forgotten setting never leaves it open.
	AdminToken string
	// CompanyTTL is how long a company's status (active, suspended) is
	// remembered; zero means 5s.
	CompanyTTL time.Duration
	Logger     *slog.Logger     // nil means slog.Default()
	Now        func() time.Time // nil means time.Now

	// CORSAllowedOrigins are the other origins whose browser code may call
	// the API (canonical, see ParseOrigins); empty means none, and the API
	// explorer, served from the API's own origin, needs none.
	CORSAllowedOrigins []string

	// TracerProvider makes the request spans; nil means otel's global one.
	TracerProvider trace.TracerProvider
	// Usage counts each company's requests; nil counts nothing (and the
	// admin usage endpoint answers 503).
	Usage Usage
	// RedisPool is reported on /metrics; nil leaves Redis pool metrics out.
	RedisPool RedisPool
}

// Server holds the dependencies of the handlers.
type Server struct {
	live, test Store
	keys       Keys
	limiter    Limiter
	guard      Guard
	companies  *companyCache
	adminToken string
	cors       []string
	tracer     trace.Tracer
	tp         trace.TracerProvider // as configured: nil means otel's global one
	metrics    *metrics
	usage      Usage
	draining   atomic.Bool
	logger     *slog.Logger
	now        func() time.Time
}

// New builds a Server from cfg.
func New(cfg Config) *Server {
	s := &Server{
		live: cfg.Live, test: cfg.Test, keys: cfg.Keys, limiter: cfg.Limiter, guard: cfg.Guard,
		adminToken: cfg.AdminToken, logger: cfg.Logger, now: cfg.Now, cors: cfg.CORSAllowedOrigins,
	}
	if s.logger == nil {
		s.logger = slog.Default()
	}
	if s.now == nil {
		s.now = time.Now
	}
	ttl := cfg.CompanyTTL
	if ttl <= 0 {
		ttl = 5 * time.Second
	}
	s.companies = newCompanyCache(ttl, s.now)
	s.tracer = tracerOf(cfg.TracerProvider)
	s.tp = cfg.TracerProvider
	s.usage = cfg.Usage
	s.metrics = newMetrics(s, cfg.RedisPool)
	return s
}

// store picks the database of the key's mode: LIVE keys never reach the
// sandbox and TEST keys never reach live data.
func (s *Server) store(m authz.Mode) Store {
	if m == authz.Live {
		return s.live
	}
	return s.test
}

// apiPrefix is the API document's path prefix (section 4; "v1" twice is the
// document's, not a typo).
const apiPrefix = "/api/v1/v1"

// Handler is the public listener's handler.
//
// The chain, outermost first, and why in that order:
//   - withRequestID: every later layer, error bodies and logs need the id;
//   - withTelemetry: the span, metrics and usage of every request,
//     rejections included; inside withRequestID so the id is on the span,
//     outside accessLog so the log line carries the trace id;
//   - accessLog: sees the final status of everything inside, panics included;
//   - withRecover: inside the log, so a panic is logged as the 500 it became;
//   - withSecurityHeaders: on every answer, errors and 404s included;
//   - withHeaderLimit: a head over 16 KiB is refused before any work, in
//     the API's error format (net/http's own, higher cut-off is plain text);
//   - withCORS: answers preflights (which carry no key) before the router
//     and authentication, and marks answers readable by listed origins;
//   - the router, then per route: authenticate (key, company, scope) before
//     rateLimit, so that unauthenticated floods cannot spend a company's
//     budget, then the handler.
func (s *Server) Handler() http.Handler {
	r := newRouter()
	r.HandleOPTIONS = false // preflights are withCORS's, below

	s.route(r, http.MethodGet, apiPrefix+"/invoices", authz.InvoicesRead, s.listInvoices)
	s.route(r, http.MethodGet, apiPrefix+"/invoices/:id", authz.InvoicesRead, s.getInvoice)
	s.route(r, http.MethodGet, apiPrefix+"/clients", authz.ClientsRead, s.listClients)
	s.route(r, http.MethodGet, apiPrefix+"/clients/:id", authz.ClientsRead, s.getClient)
	s.route(r, http.MethodPost, apiPrefix+"/clients", authz.ClientsWrite, s.createClient)
	r.HandlerFunc(http.MethodGet, "/healthz", named("GET /healthz", s.healthz))
	r.HandlerFunc(http.MethodGet, "/readyz", named("GET /readyz", s.readyz))
	s.routeDocs(r) // the developer portal (docs.go): public, no key

	var h http.Handler = r
	h = withCORS(s.cors, func(method, path string) bool {
		handle, _, _ := r.Lookup(method, path)
		return handle != nil && (method == http.MethodGet || method == http.MethodPost)
	})(h)
	h = withHeaderLimit(h)
	h = withSecurityHeaders(h)
	h = withRecover(h)
	h = accessLog(s.logger, s.now)(h)
	h = s.withTelemetry(h)
	h = withRequestID(h)
	return h
}

// newRouter is a router of either listener: no redirects (an API answers the
// path it was given or 404) and problem+json for unknown routes and methods.
func newRouter() *httprouter.Router {
	r := httprouter.New()
	r.RedirectTrailingSlash = false
	r.RedirectFixedPath = false
	r.NotFound = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The path is not echoed: callers paste keys and names into it.
		writeProblem(w, r, &Error{Code: "route_not_found", Detail: "No route matches this method and path."})
	})
	r.MethodNotAllowed = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		allow := w.Header().Get("Allow")
		writeProblem(w, r, &Error{Code: "method_not_allowed", Detail: "Method " + r.Method + " is not allowed here; allowed: " + allow + ".", Allow: allow})
	})
	return r
}

// apiHandler is an API operation, run once the caller is known and admitted.
type apiHandler func(w http.ResponseWriter, r *http.Request, c *reqState, p httprouter.Params)

// route registers an API operation behind authentication and the rate limit.
func (s *Server) route(r *httprouter.Router, method, path string, scope authz.Scope, h apiHandler) {
	name := method + " " + path
	r.Handle(method, path, func(w http.ResponseWriter, req *http.Request, p httprouter.Params) {
		st := stateFrom(req.Context())
		st.Route = name
		if err := s.authenticate(req, st, scope); err != nil {
			writeProblem(w, req, err)
			return
		}
		if err := s.admit(w, req, st); err != nil {
			writeProblem(w, req, err)
			return
		}
		h(w, req, st, p)
	})
}

// Drain turns readiness false for good, before the listeners shut down.
func (s *Server) Drain() { s.draining.Store(true) }

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// readyz answers 200 only when Redis and both databases answer, so a load
// balancer sends no traffic to an instance that could only fail it.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	checks := map[string]string{}
	ready := !s.draining.Load()
	if !ready {
		checks["shutdown"] = "draining"
	}
	for name, ping := range map[string]func(context.Context) error{
		"redis": s.keys.Ping, "liveDatabase": s.live.Ping, "testDatabase": s.test.Ping,
	} {
		checks[name] = "ok"
		if err := ping(ctx); err != nil {
			checks[name] = "unavailable"
			ready = false
		}
	}
	if !ready {
		writeProblem(w, r, &Error{Code: "not_ready", Detail: "A dependency is unavailable or the instance is draining.", Checks: checks})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"status": "ready", "checks": checks})
}
