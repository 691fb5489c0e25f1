package gateway_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
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
	"github.com/invoicing-ao/gateway/tenants"
	"github.com/invoicing-ao/gateway/usage"
	"github.com/invoicing-ao/gateway/web"
)

const (
	coA = gendata.DemoCompanyA
	coB = gendata.DemoCompanyB
	coS = gendata.DemoCompanySuspended
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
	ctx := context.Background()
	w := &world{t: t, live: testenv.Postgres(t), test: testenv.Postgres(t)}
	w.rdb, w.prefix = testenv.Redis(t)
	if _, err := gendata.SetUpSmall(ctx, w.live, w.test, 7); err != nil {
		t.Fatalf("demo data: %v", err)
	}
	return w
}

// instance is one running gateway: its own stores, caches and listeners.
type instance struct {
	srv        *gateway.Server
	adm        *admin.Service // the admin API, and the tests' keys
	pub, admin *httptest.Server
	adminH     http.Handler // the admin listener's handler, as in.admin serves it
	keys       *authz.Keyring
	limiter    *tenants.Limiter
	audit      *audit.Log
	clock      *testenv.Clock
	logs       *testenv.SyncBuffer
	live, test *backend.Store
	usage      *usage.Counter  // flushed only when a test says so
	events     *events.Service // the feed; detection runs only where a test runs it
	adminToken string
}

type instanceOpt func(*instanceConfig)

type instanceConfig struct {
	redis      redis.UniversalClient
	liveLimit  tenants.Limit
	testLimit  tenants.Limit
	adminToken string
	store      func(*backend.Config) // adjusts both databases' settings
	noIdem     bool                  // no idempotency store
	proxies    []netip.Prefix        // trusted proxies
}

func withTrustedProxies(p ...netip.Prefix) instanceOpt {
	return func(c *instanceConfig) { c.proxies = p }
}

func withRedis(r redis.UniversalClient) instanceOpt {
	return func(c *instanceConfig) { c.redis = r }
}

func (w *world) start(opts ...instanceOpt) *instance {
	t := w.t
	t.Helper()
	ctx := context.Background()
	cfg := instanceConfig{redis: w.rdb, liveLimit: tenants.Limit{Rate: 1000, Burst: 1000},
		testLimit: tenants.Limit{Rate: 1000, Burst: 1000}, adminToken: "admin-secret-token"}
	for _, o := range opts {
		o(&cfg)
	}
	in := &instance{clock: testenv.NewClock(time.Now()), logs: &testenv.SyncBuffer{}, adminToken: cfg.adminToken}
	var err error
	liveCfg, testCfg := backend.Config{URL: w.live}, backend.Config{URL: w.test}
	if cfg.store != nil {
		cfg.store(&liveCfg)
		cfg.store(&testCfg)
	}
	if in.live, err = backend.Open(ctx, liveCfg); err != nil {
		t.Fatal(err)
	}
	if in.test, err = backend.Open(ctx, testCfg); err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.NewJSONHandler(in.logs, nil))
	in.keys = authz.New(authz.Config{Redis: cfg.redis, Prefix: w.prefix + "authz:", Now: in.clock.Now, Logger: logger})
	in.limiter = tenants.New(tenants.Config{Redis: cfg.redis, Prefix: w.prefix + "tenants:",
		LiveDefault: cfg.liveLimit, TestDefault: cfg.testLimit, Logger: logger})
	in.audit = audit.New(audit.Config{Redis: cfg.redis, Prefix: w.prefix + "audit:", Now: in.clock.Now})
	// The instance's metrics, as the binary registers them (cmd/gateway).
	reg := prometheus.NewRegistry()
	reg.MustRegister(in.keys.Collector(), in.limiter.Collector(), in.live.Collector("live"), in.test.Collector("test"))
	// The instance's clock drives keys' expiry and the views of it alike.
	gcfg := gateway.Config{Live: in.live, Test: in.test, Keys: in.keys, Limiter: in.limiter,
		Guard:  tenants.NewGuard(tenants.GuardConfig{}),
		Logger: logger, Now: in.clock.Now, TrustedProxies: cfg.proxies, Metrics: reg}
	in.usage = usage.New(usage.Config{Redis: cfg.redis, Prefix: w.prefix + "usage:", FlushEvery: time.Hour, Now: in.clock.Now, Logger: logger})
	gcfg.Usage = in.usage
	if !cfg.noIdem {
		gcfg.Idempotency = idempotency.New(idempotency.Config{Redis: cfg.redis, Prefix: w.prefix + "idem:"})
	}
	if in.events, err = events.New(events.Config{Redis: cfg.redis, Prefix: w.prefix + "events:", Logger: logger,
		Sources: map[invoicing.Mode]events.Source{invoicing.Live: in.live, invoicing.Test: in.test}}); err != nil {
		t.Fatal(err)
	}
	gcfg.Feed = in.events
	in.srv = gateway.New(gcfg)
	in.adm = admin.New(admin.Config{Keys: in.keys, Limiter: in.limiter, Usage: in.usage, Audit: in.audit, Companies: in.live,
		Token: cfg.adminToken, Logger: logger, Now: in.clock.Now})
	in.pub = httptest.NewServer(in.srv.Handler())
	in.adminH = adminListener(logger, in.clock.Now, in.srv, reg, in.adm)
	in.admin = httptest.NewServer(in.adminH)
	t.Cleanup(func() {
		in.pub.Close()
		in.admin.Close()
		_ = in.usage.Close(context.Background())
		_ = in.keys.Close()
		in.live.Close()
		in.test.Close()
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

const allScopes = "invoices:read,clients:read,clients:write,events:read"

// testActor names the tests in the audit log.
const testActor = "test@gateway-tests"

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
	Method, Path, Key, Company, ContentType string
	Body                                    string
	Header                                  map[string]string
}

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
	if q.ContentType != "" {
		r.Header.Set("Content-Type", q.ContentType)
	} else if q.Body != "" {
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

// deadRedis is a client of a Redis that is not there.
func deadRedis(t *testing.T) *redis.Client {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	testenv.QuietRedisLog(t, addr)
	return redis.NewClient(&redis.Options{Addr: addr, DialTimeout: 100 * time.Millisecond, MaxRetries: -1})
}
