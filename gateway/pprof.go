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
func (s *Server) adminPprof(w http.ResponseWriter, r *http.Request, p httprouter.Params) {
	switch p.ByName("name") {
	case "/profile":
		pprof.Profile(w, r)
	case "/trace":
		pprof.Trace(w, r)
	case "/symbol":
		pprof.Symbol(w, r)
	case "/cmdline":
		// The command line can hold a secret passed as a flag; it is not served.
		writeProblem(w, r, &Error{Code: "route_not_found", Detail: "No route matches this method and path."})
	default:
		pprof.Index(w, r) // the index, and heap, goroutine, allocs... by name
	}
}
