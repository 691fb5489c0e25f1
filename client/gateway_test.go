package client_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/invoicing-ao/gateway/admin"
	"github.com/invoicing-ao/gateway/authz"
	"github.com/invoicing-ao/gateway/backend"
	"github.com/invoicing-ao/gateway/backend/gendata"
	"github.com/invoicing-ao/gateway/client"
	"github.com/invoicing-ao/gateway/events"
	"github.com/invoicing-ao/gateway/gateway"
	"github.com/invoicing-ao/gateway/idempotency"
	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
	"github.com/invoicing-ao/gateway/tenants"
)

// testGateway is a real gateway in-process: the demo data in two PostgreSQL
// databases of the test's own, keys and limits in the real Redis under the
// test's prefix. A thin recorder in front keeps what each request carried.
type testGateway struct {
	URL     string
	srv     *gateway.Server
	events  *events.Service // the feed; detection runs where a test runs it
	admin   *admin.Service  // makes the tests' keys
	live    string          // the live database's URL
	liveVia *testenv.FaultProxy

	mu   sync.Mutex
	seen []seenRequest
}

// seenRequest is what the gateway received and answered, for the retry tests.
type seenRequest struct {
	Method, Path, IdempotencyKey string
	Status                       int
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

func startGateway(t *testing.T) *testGateway {
	t.Helper()
	ctx := context.Background()
	g := &testGateway{live: testenv.Postgres(t)}
	test := testenv.Postgres(t)
	rdb, prefix := testenv.Redis(t)
	if _, err := gendata.SetUpSmall(ctx, g.live, test, 7); err != nil {
		t.Fatalf("demo data: %v", err)
	}
	// The live database through a proxy the 503 test can cut.
	g.liveVia = testenv.PostgresProxy(t)
	live, err := backend.Open(ctx, backend.Config{URL: g.liveVia.Via(g.live)})
	if err != nil {
		t.Fatal(err)
	}
	sandbox, err := backend.Open(ctx, backend.Config{URL: test})
	if err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.NewJSONHandler(io.Discard, nil))
	keys := authz.New(authz.Config{Redis: rdb, Prefix: prefix + "authz:", Logger: logger})
	limits := tenants.New(tenants.Config{Redis: rdb, Prefix: prefix + "tenants:", Logger: logger,
		LiveDefault: tenants.Limit{Rate: 1000, Burst: 1000}, TestDefault: tenants.Limit{Rate: 1000, Burst: 1000}})
	if g.events, err = events.New(events.Config{Redis: rdb, Prefix: prefix + "events:", Logger: logger,
		Sources: map[invoicing.Mode]events.Source{invoicing.Live: live.Changes(), invoicing.Test: sandbox.Changes()}}); err != nil {
		t.Fatal(err)
	}
	g.srv = gateway.New(gateway.Config{Live: live, Test: sandbox, Keys: keys, Limiter: limits, Logger: logger,
		Idempotency: idempotency.New(idempotency.Config{Redis: rdb, Prefix: prefix + "idem:"}), Feed: g.events})
	g.admin = admin.New(admin.Config{Keys: keys, Limiter: limits, Companies: live, Logger: logger})
	h := g.srv.Handler()
	pub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(sw, r)
		g.mu.Lock()
		g.seen = append(g.seen, seenRequest{r.Method, r.URL.Path, r.Header.Get("Idempotency-Key"), sw.status})
		g.mu.Unlock()
	}))
	g.URL = pub.URL
	t.Cleanup(func() {
		pub.Close()
		_ = keys.Close()
		live.Close()
		sandbox.Close()
	})
	return g
}

// api is a client of cfg.CompanyID (default: demo company A) with a new
// LIVE key of every scope, and cfg's other settings.
func (g *testGateway) api(t *testing.T, cfg client.Config) *client.API {
	t.Helper()
	scopes, err := authz.ParseScopes("invoices:read,clients:read,clients:write,events:read")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.CompanyID == "" {
		cfg.CompanyID = gendata.DemoCompanyA
	}
	k, err := g.admin.Keys.CreateKey(context.Background(), "client-tests@local",
		admin.KeySpec{CompanyID: cfg.CompanyID, Mode: invoicing.Live, Scopes: scopes, Name: "client tests"})
	if err != nil {
		t.Fatal(err)
	}
	cfg.BaseURL, cfg.APIKey = g.URL, k.Key
	a, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// requests returns what the gateway received since the last call.
func (g *testGateway) requests() []seenRequest {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := g.seen
	g.seen = nil
	return out
}
