package gateway

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/invoicing-ao/gateway/authz"
	"github.com/invoicing-ao/gateway/invoicing"
	"github.com/invoicing-ao/gateway/web"
)

// apiPrefix is the API's path prefix, as gateway/apidocs/openapi.yaml writes
// every path ("v1" twice is the API's, not a typo).
const apiPrefix = "/api/v1/v1"

// Handler is the public listener's handler: the API's operations, the
// developer portal and the health checks, in web's chain (with telemetry,
// CORS, the trusted proxies, the API's 404 hints and encoders).
func (s *Server) Handler() http.Handler { return web.Listener(s.web, s.routes) }

// routes registers the public listener's routes.
func (s *Server) routes(rt *web.Router) {
	s.api(rt, http.MethodGet, apiPrefix+"/invoices", authz.InvoicesRead, s.listInvoices)
	s.api(rt, http.MethodGet, apiPrefix+"/invoices/:id", authz.InvoicesRead, s.getInvoice)
	s.api(rt, http.MethodGet, apiPrefix+"/clients", authz.ClientsRead, s.listClients)
	s.api(rt, http.MethodGet, apiPrefix+"/clients/:id", authz.ClientsRead, s.getClient)
	s.api(rt, http.MethodPost, apiPrefix+"/clients", authz.ClientsWrite, s.createClient)
	s.api(rt, http.MethodGet, apiPrefix+"/events", authz.EventsRead, s.listEvents)
	s.Health(rt)
	s.routeDocs(rt) // the developer portal (docs.go): public, no key
}

// Health registers this instance's health and readiness checks (/healthz,
// /readyz): both listeners serve them.
func (s *Server) Health(rt *web.Router) {
	rt.Handle(http.MethodGet, "/healthz", s.healthz)
	rt.Handle(http.MethodGet, "/readyz", s.readyz)
}

// apiCall is what an API operation knows of its request beyond the request
// itself: the chain's record of it, and its caller, known and admitted.
type apiCall struct {
	st      *web.State
	company string
	mode    invoicing.Mode
}

// apiHandler is an API operation, run once the caller is known and admitted.
type apiHandler func(r *http.Request, c apiCall, p web.Params) (web.Answer, error)

// api registers an API operation behind authentication and the rate limit.
func (s *Server) api(rt *web.Router, method, path string, scope authz.Scope, h apiHandler) {
	rt.Handle(method, path, func(r *http.Request, p web.Params) (web.Answer, error) {
		st := web.StateOf(r.Context())
		key, err := s.authenticate(r, st, scope)
		if err != nil {
			return web.Answer{}, err
		}
		if err := s.admit(r, st, key.CompanyID, key.Mode); err != nil {
			return web.Answer{}, err
		}
		return h(r, apiCall{st: st, company: key.CompanyID, mode: key.Mode}, p)
	})
}

// Drain turns readiness false for good, before the listeners shut down.
func (s *Server) Drain() { s.draining.Store(true) }

func (s *Server) healthz(*http.Request, web.Params) (web.Answer, error) {
	return web.Answer{Body: map[string]string{"status": "ok"}}, nil
}

// readyz reports each dependency ("ok" or "unavailable") and answers 503
// only while the instance drains. A dependency that is down is down for
// every instance: failing readiness for it would take every instance out of
// the load balancer, and with them what they still serve (the other mode's
// database; keys verified lately, from memory). So an instance with a
// dependency down is "degraded", 200, and its answers that need the
// dependency are 503s that say which and when to retry.
func (s *Server) readyz(r *http.Request, _ web.Params) (web.Answer, error) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	deps := []struct {
		name string
		ping func(context.Context) error
	}{{"redis", s.keys.Ping}, {"liveDatabase", s.live.Ping}, {"testDatabase", s.test.Ping}}
	if s.history != nil {
		deps = append(deps, struct {
			name string
			ping func(context.Context) error
		}{"historyDatabase", s.history})
	}
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
		return web.Answer{}, &web.Error{Code: "not_ready", Detail: "The instance is draining: it is shutting down.", Checks: checks}
	}
	body := map[string]any{"status": status, "checks": checks}
	if s.durability != nil { // what Redis allows: said, never a reason to be unready
		body["redisDurability"] = s.durability()
	}
	return web.Answer{Body: body}, nil
}
