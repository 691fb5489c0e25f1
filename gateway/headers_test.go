package gateway

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/invoicing-ao/gateway/backend/gendata"
	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/tenants"
	"github.com/invoicing-ao/gateway/web"
)

// Every answer of both listeners, successes and every kind of error alike,
// is private to its caller (Cache-Control: no-store) and never to be sniffed
// into another type (X-Content-Type-Options: nosniff). The explorer's static
// files (/api/docs) are the one exception to no-store: public and cacheable.
func TestSecurityHeadersEverywhere(t *testing.T) {
	t.Parallel()
	g := newLocalGateway(t, func(c *Config) { c.CORSAllowedOrigins = []string{"https://app.example.ao"} })
	a, co := g.keys["aLive"], gendata.DemoCompanyA
	var ownInvoice, ownClient string
	for id := range g.ownIDs {
		if inv, err := g.live.GetInvoice(t.Context(), co, id); err == nil && ownInvoice == "" {
			ownInvoice = inv.ID
		} else if cl, err := g.live.GetClient(t.Context(), co, id); err == nil && ownClient == "" {
			ownClient = cl.ID
		}
	}
	const p = "/api/v1/v1"
	calls := []call{
		{"GET", p + "/invoices", a, co, "", "", nil, 200},
		{"GET", p + "/invoices/" + ownInvoice, a, co, "", "", nil, 200},
		{"GET", p + "/clients?search=a", a, co, "", "", nil, 200},
		{"GET", p + "/clients/" + ownClient, a, co, "", "", nil, 200},
		{"POST", p + "/clients", a, co, "application/json", `{"name":"Headers Lda","nif":"417000001"}`, nil, 201},
		{"POST", p + "/clients", a, co, "application/json", `{"name":"Headers Lda","nif":"417000001"}`, nil, 409},
		{"POST", p + "/clients", a, co, "text/plain", `{}`, nil, 415},
		{"POST", p + "/clients", a, co, "application/json", strings.Repeat(" ", web.MaxBodyBytes+1), nil, 413},
		{"POST", p + "/clients", a, co, "application/json", `{"name":""}`, nil, 400},
		{"GET", p + "/invoices?pageSize=0", a, co, "", "", nil, 400},
		{"GET", p + "/invoices", "", co, "", "", nil, 401},
		{"GET", p + "/invoices", "igw_live_nope", co, "", "", nil, 401},
		{"GET", p + "/invoices", a, "", "", "", nil, 400},
		{"GET", p + "/invoices", a, gendata.DemoCompanyB, "", "", nil, 403},
		{"GET", p + "/invoices", g.keys["aRead"], co, "", "", nil, 403},
		{"GET", p + "/invoices/00000000-0000-4000-8000-0000000000ff", a, co, "", "", nil, 404},
		{"GET", p + "/nothing", a, co, "", "", nil, 404},
		{"DELETE", p + "/clients", a, co, "", "", nil, 405},
		{"OPTIONS", p + "/clients", "", "", "", "", map[string]string{"Origin": "https://app.example.ao", "Access-Control-Request-Method": "POST"}, 204},
		{"OPTIONS", p + "/clients", "", "", "", "", map[string]string{"Origin": "https://evil.example", "Access-Control-Request-Method": "POST"}, 405},
		{"GET", "/healthz", "", "", "", "", nil, 200},
		{"GET", "/readyz", "", "", "", "", nil, 200},
	}
	run := func(h http.Handler, c call) { t.Helper(); runCall(t, h, c) }
	for _, c := range calls {
		run(g.h, c)
	}

	// 429: a company whose budget is one request.
	rdb, _ := testenv.Miniredis(t)
	tight := newLocalGateway(t, func(c *Config) {
		c.Limiter = tenants.New(tenants.Config{Redis: rdb, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), LiveDefault: tenants.Limit{Rate: 0.001, Burst: 1}, TestDefault: tenants.Limit{Rate: 0.001, Burst: 1}})
	})
	run(tight.h, call{"GET", p + "/clients", tight.keys["aLive"], co, "", "", nil, 200})
	run(tight.h, call{"GET", p + "/clients", tight.keys["aLive"], co, "", "", nil, 429})

	// The health routes on the admin listener's chain (the admin API's:
	// admin/headers_test.go).
	adm := web.Listener(web.Config{HostCheck: true}, g.srv.Health)
	for _, c := range []call{
		{"GET", "/admin/v1/nothing", "", "", "", "", nil, 404},
		{"GET", "/healthz", "", "", "", "", nil, 200},
		{"GET", "/readyz", "", "", "", "", nil, 200},
	} {
		run(adm, c)
	}

	// 503: the live database gone.
	g.live.Close()
	run(g.h, call{"GET", p + "/invoices/" + ownInvoice, a, co, "", "", nil, 503})

	// The explorer's files: nosniff, and a cache policy of their own.
	r := httptest.NewRequest("GET", "/api/docs", nil)
	w := httptest.NewRecorder()
	g.h.ServeHTTP(w, r)
	if w.Code == 200 && w.Header().Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("/api/docs without nosniff")
	}
}

// call is one request of TestSecurityHeadersEverywhere and the status it
// gets.
type call struct {
	method, path, key, company, ctype, body string
	hdr                                     map[string]string
	status                                  int
}

// runCall sends c to h and checks its status and the security headers.
func runCall(t *testing.T, h http.Handler, c call) {
	t.Helper()
	r := httptest.NewRequest(c.method, "http://127.0.0.1:8080"+c.path, strings.NewReader(c.body)) // an address: the admin listener answers it
	if c.key != "" {
		r.Header.Set("Authorization", "Bearer "+c.key)
	}
	if c.company != "" {
		r.Header.Set("X-Company-Id", c.company)
	}
	if c.ctype != "" {
		r.Header.Set("Content-Type", c.ctype)
	}
	for k, v := range c.hdr {
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != c.status {
		t.Errorf("%s %.60s: %d, want %d: %.200s", c.method, c.path, w.Code, c.status, w.Body)
	}
	hd := w.Header()
	if hd.Get("Cache-Control") != "no-store" || hd.Get("X-Content-Type-Options") != "nosniff" || hd.Get("X-Request-Id") == "" {
		t.Errorf("%s %.60s (%d): Cache-Control %q, X-Content-Type-Options %q", c.method, c.path, w.Code,
			hd.Get("Cache-Control"), hd.Get("X-Content-Type-Options"))
	}

}
