package admin_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/invoicing-ao/gateway/admin"
	"github.com/invoicing-ao/gateway/audit"
	"github.com/invoicing-ao/gateway/authz"
	"github.com/invoicing-ao/gateway/backend"
	"github.com/invoicing-ao/gateway/backend/gendata"
	"github.com/invoicing-ao/gateway/events"
	"github.com/invoicing-ao/gateway/gateway"
	"github.com/invoicing-ao/gateway/idempotency"
	"github.com/invoicing-ao/gateway/internal/apitest"
	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
	"github.com/invoicing-ao/gateway/shape"
	"github.com/invoicing-ao/gateway/tenants"
	"github.com/invoicing-ao/gateway/usage"
	"github.com/invoicing-ao/gateway/web"
)

// The admin API end to end: each test runs whole gateways (both listeners,
// built as `gateway serve` builds them) on a real platform, and sees on the
// public listener what an admin call changed.

const (
	coA = gendata.DemoCompanyA
	coB = gendata.DemoCompanyB
)

// world is one platform (live and sandbox PostgreSQL databases with the demo
// data, one Redis prefix) that any number of gateway instances share.
type world struct {
	t          *testing.T
	live, test string // database URLs
	rdb        *redis.Client
	prefix     string
}

func newWorld(t *testing.T) *world {
	t.Helper()
	rdb, prefix := testenv.Redis(t)
	return newWorldOn(t, rdb, prefix)
}

// newWorldOn is a world whose Redis is rdb (a replicated one, say), its
// keys under prefix.
func newWorldOn(t *testing.T, rdb *redis.Client, prefix string) *world {
	t.Helper()
	w := &world{t: t, live: testenv.Postgres(t), test: testenv.Postgres(t), rdb: rdb, prefix: prefix}
	if _, err := gendata.SetUpSmall(context.Background(), w.live, w.test, 7); err != nil {
		t.Fatalf("demo data: %v", err)
	}
	return w
}

// instance is one running gateway: its own stores, caches and listeners.
type instance struct {
	srv        *gateway.Server
	adm        *admin.Service
	pub, admin *httptest.Server
	adminH     http.Handler // the admin listener's handler, as in.admin serves it
	clock      *testenv.Clock
	logs       *testenv.SyncBuffer
	usage      *usage.Counter // flushed only when a test says so
	limiter    *tenants.Limiter
	shape      *shape.Store    // the traffic's shape: recorded only when a test flushes it
	events     *events.Service // webhooks; run only when a test says so (runEvents)
	hold       *holdback       // holds back an answer of the admin listener, on a test's demand
	adminToken string
}

type instanceConfig struct {
	liveLimit, testLimit tenants.Limit
	schedule             []time.Duration // the webhooks' retries; nil: events.DefaultSchedule
	replicas             int             // Redis replicas each change waits for
	replicaTimeout       time.Duration
}

// withReplicas makes every change wait for n Redis replicas, each wait
// bounded by timeout.
func withReplicas(n int, timeout time.Duration) func(*instanceConfig) {
	return func(c *instanceConfig) { c.replicas, c.replicaTimeout = n, timeout }
}

// withRetries gives the instance's webhooks a retry schedule of a test's
// length.
func withRetries(delays ...time.Duration) func(*instanceConfig) {
	return func(c *instanceConfig) { c.schedule = delays }
}

// start runs an instance; opts adjust its configuration.
func (w *world) start(opts ...func(*instanceConfig)) *instance {
	t := w.t
	t.Helper()
	ctx := context.Background()
	cfg := instanceConfig{liveLimit: tenants.Limit{Rate: 1000, Burst: 1000}, testLimit: tenants.Limit{Rate: 1000, Burst: 1000}}
	for _, o := range opts {
		o(&cfg)
	}
	in := &instance{clock: testenv.NewClock(time.Now()), logs: &testenv.SyncBuffer{}, adminToken: "admin-secret-token"}
	open := func(url string) *backend.Store {
		st, err := backend.Open(ctx, backend.Config{URL: url})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(st.Close)
		return st
	}
	live, test := open(w.live), open(w.test)
	logger := slog.New(slog.NewJSONHandler(in.logs, nil))
	keys := authz.New(authz.Config{Redis: w.rdb, Prefix: w.prefix + "authz:", Now: in.clock.Now, Logger: logger,
		MinReplicas: cfg.replicas, ReplicaTimeout: cfg.replicaTimeout})
	limiter := tenants.New(tenants.Config{Redis: w.rdb, Prefix: w.prefix + "tenants:", CountOffered: true,
		LiveDefault: cfg.liveLimit, TestDefault: cfg.testLimit, Logger: logger, MinReplicas: cfg.replicas, ReplicaTimeout: cfg.replicaTimeout})
	in.limiter = limiter
	in.shape = shape.New(shape.Config{Redis: w.rdb, Prefix: w.prefix + "shape:", Now: in.clock.Now, Logger: logger})
	in.usage = usage.New(usage.Config{Redis: w.rdb, Prefix: w.prefix + "usage:", FlushEvery: time.Hour, Now: in.clock.Now, Logger: logger})
	// The instance's metrics, as the binary registers them (cmd/gateway).
	reg := prometheus.NewRegistry()
	reg.MustRegister(keys.Collector(), limiter.Collector(), live.Collector("live"), test.Collector("test"))
	// The instance's clock drives keys' expiry and the views of it alike.
	in.srv = gateway.New(gateway.Config{Live: live, Test: test, Keys: keys, Limiter: limiter,
		Guard: tenants.NewGuard(tenants.GuardConfig{}), Logger: logger, Now: in.clock.Now, Usage: in.usage,
		Idempotency: idempotency.New(idempotency.Config{Redis: w.rdb, Prefix: w.prefix + "idem:"}), Metrics: reg})
	// Webhooks to receivers on this machine (plain http, loopback), with
	// ticks and a settle short enough for a test.
	ev, err := events.New(events.Config{Redis: w.rdb, Prefix: w.prefix + "events:", Logger: logger,
		Sources:   map[invoicing.Mode]events.Source{invoicing.Live: live, invoicing.Test: test},
		AllowHTTP: true, AllowedNetworks: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
		Tick: 20 * time.Millisecond, Settle: 300 * time.Millisecond, Timeout: 2 * time.Second, Schedule: cfg.schedule,
		MinReplicas: cfg.replicas, ReplicaTimeout: cfg.replicaTimeout})
	if err != nil {
		t.Fatal(err)
	}
	in.events = ev
	in.adm = admin.New(admin.Config{Keys: keys, Limiter: limiter, Usage: in.usage, Shape: in.shape, Companies: live, Directory: live, Token: in.adminToken, Webhooks: ev,
		Audit:  audit.New(audit.Config{Redis: w.rdb, Prefix: w.prefix + "audit:", Now: in.clock.Now, MinReplicas: cfg.replicas, ReplicaTimeout: cfg.replicaTimeout}),
		Logger: logger, Now: in.clock.Now})
	in.pub = httptest.NewServer(in.srv.Handler())
	in.hold = &holdback{}
	in.adminH = adminListener(logger, in.clock.Now, in.srv, reg, in.adm)
	in.admin = httptest.NewServer(in.hold.wrap(in.adminH))
	t.Cleanup(func() {
		in.pub.Close()
		in.admin.Close()
		_ = in.usage.Close(context.Background())
		_ = keys.Close()
	})
	return in
}

// adminListener is the admin listener as the binary assembles it
// (cmd/gateway/listeners.go): the instance's health and metrics, and the
// admin API.
func adminListener(logger *slog.Logger, now func() time.Time, srv *gateway.Server, reg *prometheus.Registry, adm *admin.Service) http.Handler {
	return web.Listener(web.Config{Logger: logger, Now: now, HostCheck: true}, srv.Health, func(rt *web.Router) {
		rt.Handle(http.MethodGet, "/metrics", web.MetricsRoute(reg))
	}, adm.Routes)
}

// runEvents runs the instance's events (detection and delivery) until the
// test ends.
func (in *instance) runEvents(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); in.events.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

// key creates a key through the same path as the admin API and the CLI.
func (in *instance) key(t *testing.T, company string, mode invoicing.Mode, scopes string) admin.KeyView {
	t.Helper()
	sc, err := authz.ParseScopes(scopes)
	if err != nil {
		t.Fatal(err)
	}
	v, err := in.adm.CreateKey(context.Background(), testActor, admin.KeySpec{CompanyID: company, Mode: mode, Scopes: sc, Name: "test"})
	if err != nil {
		t.Fatalf("create key: %v", err)
	}
	return v
}

const allScopes = "invoices:read,clients:read,clients:write"

// testActor names the tests in the audit log.
const testActor = "test@admin-tests"

// resp is a decoded answer.
type resp struct {
	Status int
	Header http.Header
	Body   []byte
}

func (r resp) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("body is not a JSON object: %v: %s", err, r.Body)
	}
	return m
}

// req describes one request; zero fields are left out.
type req struct {
	Method, Path, Key, Company string
	Body                       string
	Header                     map[string]string
}

// do sends q to base and checks what every answer carries, and the public
// API's answers against the OpenAPI document (apitest.Check).
func do(t *testing.T, base string, q req) resp {
	t.Helper()
	if q.Method == "" {
		q.Method = http.MethodGet
	}
	var body io.Reader
	if q.Body != "" {
		body = strings.NewReader(q.Body)
	}
	r, err := http.NewRequest(q.Method, base+q.Path, body)
	if err != nil {
		t.Fatal(err)
	}
	if q.Key != "" {
		r.Header.Set("Authorization", "Bearer "+q.Key)
	}
	if q.Company != "" {
		r.Header.Set("X-Company-Id", q.Company)
	}
	if q.Body != "" {
		r.Header.Set("Content-Type", "application/json")
	}
	for k, v := range q.Header {
		r.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	out := resp{Status: res.StatusCode, Header: res.Header, Body: b}
	apitest.Check(t, apitest.Request{Method: q.Method, Path: q.Path}, apitest.Answer{Status: out.Status, Header: out.Header, Body: out.Body})
	return out
}

// expectProblem asserts status and code.
func expectProblem(t *testing.T, r resp, status int, code string) map[string]any {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d: %s", r.Status, status, r.Body)
	}
	m := r.json(t)
	if m["code"] != code {
		t.Fatalf("code %v, want %s: %s", m["code"], code, r.Body)
	}
	return m
}

// logLine is the access log line of a request id.
func logLine(t *testing.T, in *instance, requestID string) map[string]any {
	t.Helper()
	for _, l := range strings.Split(in.logs.String(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && m["msg"] == "request" && m["requestId"] == requestID {
			return m
		}
	}
	t.Fatalf("no access log line for request %s", requestID)
	return nil
}
