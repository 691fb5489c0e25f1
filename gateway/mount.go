package gateway

import (
	"net/http"

	"github.com/invoicing-ao/gateway/gateway/apidocs"
	"github.com/invoicing-ao/gateway/web"
)

// The admin listener, and the kit through which another package (admin)
// mounts its routes on it: web's chain and writer, with the admin
// listener's host check.

// AdminHandler is the admin listener's handler: this instance's health,
// readiness and metrics, and the routes mount registers (the admin API, its
// console and the runtime profiles: admin.Service.Handler). It is never
// mounted on the public listener. A nil mount mounts nothing.
func (s *Server) AdminHandler(mount func(*Router)) http.Handler {
	return web.Listener(web.Config{Logger: s.logger, Now: s.now, HostCheck: true, Hosts: s.adminHosts}, func(rt *web.Router) {
		s.Health(rt)
		// No token for /metrics: scrapers need no power over keys, and the
		// metrics hold no secret and no company data.
		rt.Handle(http.MethodGet, "/metrics", func(*http.Request, web.Params) (web.Answer, error) {
			return web.Answer{Serve: s.metrics.handler()}, nil
		})
		if mount != nil {
			mount(rt)
		}
	})
}

// The names admin uses, web's.
type (
	Router     = web.Router
	Params     = web.Params
	RouteFunc  = web.RouteFunc
	Answer     = web.Answer
	Error      = web.Error
	FieldError = web.FieldError
)

var (
	ReadJSONBody = web.ReadJSONBody
	StringMember = web.StringMember
	Bearer       = web.Bearer
	ParseQuery   = web.ParseQuery
	Problem      = web.Problem
)

// FileHandler serves an embedded file as the developer portal's are served.
func FileHandler(f *apidocs.File) http.Handler { return f }
