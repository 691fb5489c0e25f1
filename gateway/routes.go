package gateway

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/invoicing-ao/gateway/authz"
)

// apiPrefix is the API's path prefix, as gateway/apidocs/openapi.yaml writes
// every path ("v1" twice is the API's, not a typo).
const apiPrefix = "/api/v1/v1"

// Handler is the public listener's handler: the API's operations, the
// developer portal and the health checks, behind the chain (chain.go).
func (s *Server) Handler() http.Handler {
	rt := newRoutes(routeHint)
	s.api(rt, http.MethodGet, apiPrefix+"/invoices", authz.InvoicesRead, s.listInvoices)
	s.api(rt, http.MethodGet, apiPrefix+"/invoices/:id", authz.InvoicesRead, s.getInvoice)
	s.api(rt, http.MethodGet, apiPrefix+"/clients", authz.ClientsRead, s.listClients)
	s.api(rt, http.MethodGet, apiPrefix+"/clients/:id", authz.ClientsRead, s.getClient)
	s.api(rt, http.MethodPost, apiPrefix+"/clients", authz.ClientsWrite, s.createClient)
	s.api(rt, http.MethodGet, apiPrefix+"/events", authz.EventsRead, s.listEvents)
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

// readyz reports each dependency ("ok" or "unavailable") and answers 503
// only while the instance drains. A dependency that is down is down for
// every instance: failing readiness for it would take every instance out of
// the load balancer, and with them what they still serve (the other mode's
// database; keys verified lately, from memory). So an instance with a
// dependency down is "degraded", 200, and its answers that need the
// dependency are 503s that say which and when to retry.
func (s *Server) readyz(_ http.ResponseWriter, r *http.Request, _ httprouter.Params) (answer, error) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	deps := []struct {
		name string
		ping func(context.Context) error
	}{{"redis", s.keys.Ping}, {"liveDatabase", s.live.Ping}, {"testDatabase", s.test.Ping}}
	// Together: a dependency that hangs must not use up the others' time.
	states := make([]string, len(deps))
	var wg sync.WaitGroup
	for i, d := range deps {
		wg.Go(func() {
			states[i] = "ok"
			if d.ping(ctx) != nil {
				states[i] = "unavailable"
			}
		})
	}
	wg.Wait()
	checks := make(map[string]string, len(deps)+1)
	status := "ready"
	for i, d := range deps {
		checks[d.name] = states[i]
		if states[i] != "ok" {
			status = "degraded"
		}
	}
	if s.draining.Load() {
		checks["shutdown"] = "draining"
		return answer{}, &Error{Code: "not_ready", Detail: "The instance is draining: it is shutting down.", Checks: checks}
	}
	body := map[string]any{"status": status, "checks": checks}
	if s.durability != nil { // what Redis allows: said, never a reason to be unready
		body["redisDurability"] = s.durability()
	}
	return answer{body: body}, nil
}
