package admin

import (
	"net/http"
	"net/http/pprof"

	"github.com/invoicing-ao/gateway/web"
)

// adminPprof serves Go's runtime profiles (net/http/pprof) on the admin
// listener, behind the admin token: an SRE can profile a live instance under
// real load without a rebuild, and callers of the public API never reach it.
// CPU profiles and traces must be shorter than the listener's write timeout
// (30s by default): ask for ?seconds=20.
func (s *Service) adminPprof(_ *http.Request, p web.Params) (web.Answer, error) {
	switch p.ByName("name") {
	case "/profile":
		return web.Answer{Serve: http.HandlerFunc(pprof.Profile)}, nil
	case "/trace":
		return web.Answer{Serve: http.HandlerFunc(pprof.Trace)}, nil
	case "/symbol":
		return web.Answer{Serve: http.HandlerFunc(pprof.Symbol)}, nil
	case "/cmdline":
		// The command line can hold a secret passed as a flag; it is not served.
		return web.Answer{}, &web.Error{Code: "route_not_found", Detail: "No route matches this method and path."}
	}
	return web.Answer{Serve: http.HandlerFunc(pprof.Index)}, nil // the index, and heap, goroutine, allocs... by name
}
