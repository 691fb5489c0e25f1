package gateway

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/invoicing-ao/gateway/backend/gendata"
)

// The CORS policy on the real handler: a listed origin may preflight and
// read answers (errors included); any other origin, and the same origin
// (which sends no preflight), gets no Access-Control-* header at all.
func TestCORS(t *testing.T) {
	t.Parallel()
	const allowed = "https://app.example.ao"
	g := newLocalGateway(t, func(c *Config) { c.CORSAllowedOrigins = []string{allowed} })
	closed := newLocalGateway(t, nil)
	req := corsRequest
	preflight := func(method string) map[string]string {
		return map[string]string{"Access-Control-Request-Method": method, "Access-Control-Request-Headers": "authorization, x-company-id, content-type"}
	}

	// Preflights from the listed origin, for each operation: 204 before any
	// authentication (a preflight carries no key).
	for _, op := range [][2]string{{"GET", "/api/v1/v1/invoices"}, {"GET", "/api/v1/v1/invoices/x"}, {"GET", "/api/v1/v1/clients"},
		{"GET", "/api/v1/v1/clients/x"}, {"POST", "/api/v1/v1/clients"}} {
		w := g.serve(req("OPTIONS", op[1], allowed, preflight(op[0])))
		h := w.Header()
		if w.Code != http.StatusNoContent || h.Get("Access-Control-Allow-Origin") != allowed ||
			h.Get("Access-Control-Allow-Methods") != "GET, POST" ||
			h.Get("Access-Control-Allow-Headers") != "Authorization, X-Company-Id, Content-Type, X-Request-Id, Idempotency-Key" ||
			h.Get("Access-Control-Allow-Credentials") != "" || !slices.Contains(h.Values("Vary"), "Origin") {
			t.Errorf("preflight %s %s: %d %v", op[0], op[1], w.Code, h)
		}
		checkAnswer(t, "preflight", w)
	}
	// Preflights the policy refuses: the router answers as without CORS.
	for name, r := range map[string]*http.Request{
		"other origin":     req("OPTIONS", "/api/v1/v1/clients", "https://evil.example", preflight("GET")),
		"origin by prefix": req("OPTIONS", "/api/v1/v1/clients", allowed+".evil.example", preflight("GET")),
		"unrouted method":  req("OPTIONS", "/api/v1/v1/clients", allowed, preflight("DELETE")),
		"unknown path":     req("OPTIONS", "/api/v1/v1/nothing", allowed, preflight("GET")),
		"closed gateway":   req("OPTIONS", "/api/v1/v1/clients", allowed, preflight("GET")),
	} {
		gw := g
		if name == "closed gateway" {
			gw = closed
		}
		w := gw.serve(r)
		checkAnswer(t, name, w)
		if w.Code != http.StatusMethodNotAllowed && w.Code != http.StatusNotFound {
			t.Errorf("%s: %d %s", name, w.Code, w.Body)
		}
		noCORS(t, name, w)
	}

	corsAnswers(t, allowed, g, closed)
}

// corsAnswers checks actual requests: the listed origin may read the
// answer, errors included, with the headers a client needs exposed; never
// "*", never credentials; any other origin, the same origin and a gateway
// with no origin listed (closed) get no Access-Control-* header.
func corsAnswers(t *testing.T, allowed string, g, closed *localGateway) {
	t.Helper()
	req := corsRequest
	auth := map[string]string{"Authorization": "Bearer " + g.keys["aLive"], "X-Company-Id": gendata.DemoCompanyA}
	for name, c := range map[string]struct {
		r      *http.Request
		status int
	}{
		"list":       {req("GET", "/api/v1/v1/clients", allowed, auth), 200},
		"no key":     {req("GET", "/api/v1/v1/clients", allowed, nil), 401},
		"bad params": {req("GET", "/api/v1/v1/clients?pageSize=0", allowed, auth), 400},
	} {
		w := g.serve(c.r)
		checkAnswer(t, name, w)
		h := w.Header()
		if w.Code != c.status || h.Get("Access-Control-Allow-Origin") != allowed ||
			h.Get("Access-Control-Expose-Headers") != "RateLimit, RateLimit-Policy, Retry-After, X-Request-Id, Location, Idempotent-Replayed" ||
			h.Get("Access-Control-Allow-Credentials") != "" || !slices.Contains(h.Values("Vary"), "Origin") {
			t.Errorf("%s: %d %v", name, w.Code, h)
		}
	}
	for name, w := range map[string]*httptest.ResponseRecorder{
		"other origin":   g.serve(req("GET", "/api/v1/v1/clients", "https://evil.example", auth)),
		"same origin":    g.serve(req("GET", "/api/v1/v1/clients", "", auth)),
		"closed gateway": closed.serve(req("GET", "/api/v1/v1/clients", allowed, nil)),
	} {
		checkAnswer(t, name, w)
		noCORS(t, name, w)
	}
	// Closed, no answer depends on Origin: none says it varies by it.
	if v := closed.serve(req("GET", "/api/v1/v1/clients", allowed, nil)).Header().Values("Vary"); slices.Contains(v, "Origin") {
		t.Errorf("closed gateway: Vary %v", v)
	}
}

func corsRequest(method, path, origin string, hdr map[string]string) *http.Request {
	r := httptest.NewRequest(method, path, nil)
	if origin != "" {
		r.Header.Set("Origin", origin)
	}
	for k, v := range hdr {
		r.Header.Set(k, v)
	}
	return r
}

// noCORS fails when w carries any Access-Control-* header.
func noCORS(t *testing.T, what string, w *httptest.ResponseRecorder) {
	t.Helper()
	for k := range w.Header() {
		if strings.HasPrefix(k, "Access-Control-") {
			t.Errorf("%s: %s: %s", what, k, w.Header().Get(k))
		}
	}
}
