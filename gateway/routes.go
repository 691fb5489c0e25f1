package gateway

import (
	"context"
	"net/http"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/invoicing-ao/gateway/authz"
)

// apiPrefix is the API document's path prefix (section 4; "v1" twice is the
// document's, not a typo).
const apiPrefix = "/api/v1/v1"

// Handler is the public listener's handler: the API's operations, the
// developer portal and the health checks, behind the chain (chain.go).
func (s *Server) Handler() http.Handler {
	rt := newRoutes()
	s.api(rt, http.MethodGet, apiPrefix+"/invoices", authz.InvoicesRead, s.listInvoices)
	s.api(rt, http.MethodGet, apiPrefix+"/invoices/:id", authz.InvoicesRead, s.getInvoice)
	s.api(rt, http.MethodGet, apiPrefix+"/clients", authz.ClientsRead, s.listClients)
	s.api(rt, http.MethodGet, apiPrefix+"/clients/:id", authz.ClientsRead, s.getClient)
	s.api(rt, http.MethodPost, apiPrefix+"/clients", authz.ClientsWrite, s.createClient)
	rt.handle(http.MethodGet, "/healthz", "GET /healthz", s.healthz)
	rt.handle(http.MethodGet, "/readyz", "GET /readyz", s.readyz)
	s.routeDocs(rt) // the developer portal (docs.go): public, no key
	return s.build(public, rt)
}

// apiHandler is an API operation, run once the caller is known and admitted.
type apiHandler func(r *http.Request, st *reqState, p httprouter.Params) (answer, error)

// api registers an API operation behind authentication and the rate limit.
func (s *Server) api(rt *routes, method, path string, scope authz.Scope, h apiHandler) {
	rt.handle(method, path, method+" "+path, func(w http.ResponseWriter, r *http.Request, p httprouter.Params) (answer, error) {
		st := stateFrom(r.Context())
		if err := s.authenticate(r, st, scope); err != nil {
			return answer{}, err
		}
		if err := s.admit(w, r, st); err != nil {
			return answer{}, err
		}
		return h(r, st, p)
	})
}

// Drain turns readiness false for good, before the listeners shut down.
func (s *Server) Drain() { s.draining.Store(true) }

func (s *Server) healthz(http.ResponseWriter, *http.Request, httprouter.Params) (answer, error) {
	return answer{body: map[string]string{"status": "ok"}}, nil
}

// readyz answers 200 only when Redis and both databases answer, so a load
// balancer sends no traffic to an instance that could only fail it.
func (s *Server) readyz(_ http.ResponseWriter, r *http.Request, _ httprouter.Params) (answer, error) {
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
		return answer{}, &Error{Code: "not_ready", Detail: "A dependency is unavailable or the instance is draining.", Checks: checks}
	}
	return answer{body: map[string]any{"status": "ready", "checks": checks}}, nil
}
