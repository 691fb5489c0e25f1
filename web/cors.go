package web

import (
	"net/http"
	"net/url"
	"strings"
)

// CORS policy. The API explorer is served from the API's own origin and needs
// no CORS at all; other origins get access only when the operator lists them
// (Config.CORSAllowedOrigins, as invoicing.ParseOrigins reads them). The answer never says "*" and never allows
// credentials: callers authenticate with an Authorization header their own
// code sets, never with cookies, so no browser ever sends the API ambient
// authority, and a listed origin sees only what its own key may see.
const (
	corsAllowMethods  = "GET, POST"
	corsAllowHeaders  = "Authorization, X-Company-Id, Content-Type, X-Request-Id, Idempotency-Key"
	corsExposeHeaders = "RateLimit, RateLimit-Policy, Retry-After, X-Request-Id, Location, Idempotent-Replayed"
	corsMaxAge        = "600" // seconds a browser may reuse a preflight answer
)

// withCORS answers CORS preflights for the API's routes and marks answers to
// listed origins as readable by them. It runs before the router, because a
// preflight carries no Authorization header and must not meet authentication.
// routed reports whether method and path name an API operation, so that a
// preflight for a route that does not exist gets the router's own 404 or 405.
func withCORS(allowed []string, routed func(method string, u *url.URL) bool) layer {
	set := make(map[string]bool, len(allowed))
	for _, o := range allowed {
		set[o] = true
	}
	return func(next handler) handler {
		if len(set) == 0 {
			// Closed: no answer depends on Origin, so none says Vary: Origin
			// (caches keep one copy), and preflights meet the router's 405.
			return next
		}
		return func(w http.ResponseWriter, r *http.Request) (Answer, error) {
			h := w.Header()
			h.Add("Vary", "Origin")
			origin := r.Header.Get("Origin")
			ok := origin != "" && set[strings.ToLower(origin)]
			if r.Method == http.MethodOptions && origin != "" && r.Header.Get("Access-Control-Request-Method") != "" {
				h.Add("Vary", "Access-Control-Request-Method")
				h.Add("Vary", "Access-Control-Request-Headers")
				if ok && routed(r.Header.Get("Access-Control-Request-Method"), r.URL) {
					h.Set("Access-Control-Allow-Origin", origin)
					h.Set("Access-Control-Allow-Methods", corsAllowMethods)
					h.Set("Access-Control-Allow-Headers", corsAllowHeaders)
					h.Set("Access-Control-Max-Age", corsMaxAge)
					return Answer{Status: http.StatusNoContent}, nil
				}
				// An origin not listed, or no such operation: the router
				// answers as it would without CORS (405 or 404), with no
				// Access-Control-* header, so the browser refuses.
			} else if ok {
				h.Set("Access-Control-Allow-Origin", origin)
				h.Set("Access-Control-Expose-Headers", corsExposeHeaders)
			}
			return next(w, r)
		}
	}
}
