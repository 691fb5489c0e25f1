package gateway

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"

	"github.com/invoicing-ao/gateway/authz"
	"github.com/invoicing-ao/gateway/backend"
	"github.com/invoicing-ao/gateway/backend/gendata"
	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
	"github.com/invoicing-ao/gateway/tenants"
	"github.com/invoicing-ao/gateway/web"
)

// localGateway is the whole public handler on real parts that need no
// service: SQLite files holding the demo data and an in-process Redis. Fuzz
// targets use it (each fuzz worker process builds its own in well under a
// second); the e2e suite covers the same handler on PostgreSQL and Redis.
type localGateway struct {
	srv     *Server
	h       http.Handler
	ring    *authz.Keyring // makes the keys: managing them is the admin package's
	logs    *testenv.SyncBuffer
	keys    map[string]string // name -> secret: aLive, aTest, aRead (clients:read), bLive, bTest
	live    *backend.Store
	test    *backend.Store
	ownIDs  map[string]bool // every id company A may see, in either mode
	otherID map[string]bool // every id of company B, in either mode
}

func newLocalGateway(tb testing.TB, edit func(*Config)) *localGateway {
	tb.Helper()
	ctx := context.Background()
	dir := tb.TempDir()
	liveURL, testURL := "sqlite:"+filepath.Join(dir, "live.db"), "sqlite:"+filepath.Join(dir, "test.db")
	if _, err := gendata.SetUpSmall(ctx, liveURL, testURL, 7); err != nil {
		tb.Fatal(err)
	}
	g := &localGateway{logs: &testenv.SyncBuffer{}, keys: map[string]string{}, ownIDs: map[string]bool{}, otherID: map[string]bool{}}
	var err error
	if g.live, err = backend.Open(ctx, backend.Config{URL: liveURL}); err != nil {
		tb.Fatal(err)
	}
	if g.test, err = backend.Open(ctx, backend.Config{URL: testURL}); err != nil {
		tb.Fatal(err)
	}
	rdb, _ := testenv.Miniredis(tb)
	logger := slog.New(slog.NewJSONHandler(g.logs, nil))
	keys := authz.New(authz.Config{Redis: rdb, Prefix: "authz:", Logger: logger})
	lim := tenants.New(tenants.Config{Redis: rdb, Prefix: "tenants:", Logger: logger,
		LiveDefault: tenants.Limit{Rate: 1e5, Burst: 1e5}, TestDefault: tenants.Limit{Rate: 1e5, Burst: 1e5}})
	g.ring = keys
	cfg := Config{Live: g.live, Test: g.test, Keys: keys, Limiter: lim, Guard: tenants.NewGuard(tenants.GuardConfig{}), Logger: logger}
	if edit != nil {
		edit(&cfg)
	}
	g.srv = New(cfg)
	g.h = g.srv.Handler()
	tb.Cleanup(func() {
		_ = keys.Close()
		g.live.Close()
		g.test.Close()
	})
	for name, k := range map[string]struct {
		co     string
		mode   invoicing.Mode
		scopes string
	}{
		"aLive": {gendata.DemoCompanyA, invoicing.Live, "invoices:read,clients:read,clients:write"},
		"aTest": {gendata.DemoCompanyA, invoicing.Test, "invoices:read,clients:read,clients:write"},
		"aRead": {gendata.DemoCompanyA, invoicing.Live, "clients:read"},
		"bLive": {gendata.DemoCompanyB, invoicing.Live, "invoices:read,clients:read,clients:write"},
		"bTest": {gendata.DemoCompanyB, invoicing.Test, "invoices:read,clients:read,clients:write"},
	} {
		g.keys[name] = g.newKey(tb, k.co, k.mode, k.scopes, name)
	}
	for _, st := range []*backend.Store{g.live, g.test} {
		for co, set := range map[string]map[string]bool{gendata.DemoCompanyA: g.ownIDs, gendata.DemoCompanyB: g.otherID} {
			collectIDs(tb, st, co, set)
		}
	}
	return g
}

// newKey makes a key of company co and returns its secret; cidrs, if any,
// are the networks it is accepted from.
func (g *localGateway) newKey(tb testing.TB, co string, mode invoicing.Mode, scopes, name string, cidrs ...string) string {
	tb.Helper()
	sc, err := authz.ParseScopes(scopes)
	if err != nil {
		tb.Fatal(err)
	}
	nets, err := authz.ParseCIDRs(cidrs)
	if err != nil {
		tb.Fatal(err)
	}
	_, secret, err := g.ring.Create(context.Background(), authz.NewKey{CompanyID: co, Mode: mode, Scopes: sc, Name: name, AllowedCIDRs: nets})
	if err != nil {
		tb.Fatal(err)
	}
	return secret
}

// collectIDs adds every invoice and client id of a company in st to set.
func collectIDs(tb testing.TB, st *backend.Store, company string, set map[string]bool) {
	ctx := context.Background()
	for p := 1; ; p++ {
		inv, err := st.ListInvoices(ctx, company, invoicing.InvoiceFilter{Page: p, PageSize: 100})
		if err != nil {
			tb.Fatal(err)
		}
		cl, err := st.ListClients(ctx, company, invoicing.ClientFilter{Page: p, PageSize: 100})
		if err != nil {
			tb.Fatal(err)
		}
		for _, x := range inv.Data {
			set[x.ID] = true
		}
		for _, x := range cl.Data {
			set[x.ID] = true
		}
		if len(inv.Data) < 100 && len(cl.Data) < 100 {
			return
		}
	}
}

// serve runs r through the handler and returns the recorded answer.
func (g *localGateway) serve(r *http.Request) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	g.h.ServeHTTP(w, r)
	return w
}

// checkAnswer asserts what every answer to any input must be: never a 5xx,
// the security headers, and for errors a complete problem whose code is in
// the one table, with the status that table gives it.
func checkAnswer(t *testing.T, what string, w *httptest.ResponseRecorder) problem {
	t.Helper()
	h := w.Header()
	if w.Code >= 500 {
		t.Fatalf("%s: %d %s", what, w.Code, w.Body)
	}
	if h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Cache-Control") != "no-store" || h.Get("X-Request-Id") == "" {
		t.Fatalf("%s: missing security headers: %v", what, h)
	}
	var p problem
	if w.Code < 400 {
		return p
	}
	if ct := h.Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("%s: error with Content-Type %q: %s", what, ct, w.Body)
	}
	if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil {
		t.Fatalf("%s: problem body: %v: %s", what, err, w.Body)
	}
	pc, ok := problemTable()[p.Code]
	if !ok || pc.Status != w.Code || p.Status != w.Code || p.RequestID != h.Get("X-Request-Id") || p.Detail == "" {
		t.Fatalf("%s: problem out of the table: %d %s", what, w.Code, w.Body)
	}
	return p
}

// problem is an RFC 9457 body as the API writes it.
type problem struct {
	Type      string           `json:"type"`
	Title     string           `json:"title"`
	Status    int              `json:"status"`
	Detail    string           `json:"detail"`
	Code      string           `json:"code"`
	RequestID string           `json:"requestId"`
	Errors    []web.FieldError `json:"errors"`
}

// problemTable is the one table of codes (web.ProblemCodes), read once the
// package's codes are defined.
var problemTable = sync.OnceValue(web.ProblemCodes)
