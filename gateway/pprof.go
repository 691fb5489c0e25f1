package gateway

import (
	"net/http"
	"net/http/pprof"

	"github.com/julienschmidt/httprouter"
)

// adminPprof serves Go's runtime profiles (net/http/pprof) on the admin
// listener, behind the admin token: an SRE can profile a live instance under
// real load without a rebuild, and callers of the public API never reach it.
// CPU profiles and traces must be shorter than the listener's write timeout
// (30s by default): ask for ?seconds=20.
func (s *Server) adminPprof(_ *http.Request, p httprouter.Params) (answer, error) {
	switch p.ByName("name") {
	case "/profile":
		return answer{serve: http.HandlerFunc(pprof.Profile)}, nil
	case "/trace":
		return answer{serve: http.HandlerFunc(pprof.Trace)}, nil
	case "/symbol":
		return answer{serve: http.HandlerFunc(pprof.Symbol)}, nil
	case "/cmdline":
		// The command line can hold a secret passed as a flag; it is not served.
		return answer{}, &Error{Code: "route_not_found", Detail: "No route matches this method and path."}
	}
	return answer{serve: http.HandlerFunc(pprof.Index)}, nil // the index, and heap, goroutine, allocs... by name
}
