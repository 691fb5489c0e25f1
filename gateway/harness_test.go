package gateway_test

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/invoicing-ao/gateway/admin"
	"github.com/invoicing-ao/gateway/audit"
	"github.com/invoicing-ao/gateway/authz"
	"github.com/invoicing-ao/gateway/backend"
	"github.com/invoicing-ao/gateway/backend/gendata"
	"github.com/invoicing-ao/gateway/events"
	"github.com/invoicing-ao/gateway/gateway"
	"github.com/invoicing-ao/gateway/internal/apitest/harness"
	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
	"github.com/invoicing-ao/gateway/tenants"
	"github.com/invoicing-ao/gateway/usage"
)

// The public API end to end runs whole gateways (both listeners, built as
// `gateway serve` builds them, by internal/apitest/harness) on a real
// platform. This file names the harness's parts as this package's tests use
// them.

const (
	coA = gendata.DemoCompanyA
	coB = gendata.DemoCompanyB
	coS = gendata.DemoCompanySuspended
)

// world is one platform (live and sandbox PostgreSQL databases with the demo
// data, one Redis prefix) that any number of gateway instances share.
type world struct {
	h          *harness.World
	t          *testing.T
	live, test string // database URLs
	rdb        *redis.Client
	prefix     string
}

func newWorld(t *testing.T) *world {
	t.Helper()
	h := harness.NewWorld(t)
	return &world{h: h, t: t, live: h.Live, test: h.Test, rdb: h.Redis, prefix: h.Prefix}
}

// instance is one running gateway: its own stores, caches and listeners.
type instance struct {
	h          *harness.Instance
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

// instanceConfig is the harness's, under the names the tests set it by.
type instanceConfig struct {
	redis   redis.UniversalClient
	store   func(*backend.Config) // adjusts both databases' settings
	noIdem  bool                  // no idempotency store
	proxies []netip.Prefix        // trusted proxies
}

func withTrustedProxies(p ...netip.Prefix) instanceOpt {
	return func(c *instanceConfig) { c.proxies = p }
}

func withRedis(r redis.UniversalClient) instanceOpt {
	return func(c *instanceConfig) { c.redis = r }
}

func (w *world) start(opts ...instanceOpt) *instance {
	w.t.Helper()
	var cfg instanceConfig
	for _, o := range opts {
		o(&cfg)
	}
	h := w.h.Start(harness.Config{Redis: cfg.redis, Store: cfg.store, NoIdempotency: cfg.noIdem, TrustedProxies: cfg.proxies})
	return &instance{h: h, srv: h.Srv, adm: h.Adm, pub: h.Pub, admin: h.Admin, adminH: h.AdminH, keys: h.Keys,
		limiter: h.Limiter, audit: h.Audit, clock: h.Clock, logs: h.Logs, live: h.Live, test: h.Test,
		usage: h.Usage, events: h.Events, adminToken: h.AdminToken}
}

// key creates a key through the same path as the admin API and the CLI.
func (in *instance) key(t *testing.T, company string, mode invoicing.Mode, scopes string) admin.KeyView {
	t.Helper()
	return in.h.Key(t, testActor, company, mode, scopes)
}

const allScopes = "invoices:read,clients:read,clients:write,events:read"

// testActor names the tests in the audit log.
const testActor = "test@gateway-tests"

// resp is a decoded answer.
type resp harness.Resp

func (r resp) json(t *testing.T) map[string]any {
	t.Helper()
	return harness.Resp(r).JSON(t)
}

// req describes one request; zero fields are left out.
type req = harness.Req

// do sends q to base and checks what every answer carries, and the public
// API's answers against the OpenAPI document (apitest.Check).
func do(t *testing.T, base string, q req) resp {
	t.Helper()
	return resp(harness.Do(t, base, q))
}

// expectProblem asserts status and code.
func expectProblem(t *testing.T, r resp, status int, code string) map[string]any {
	t.Helper()
	return harness.ExpectProblem(t, harness.Resp(r), status, code)
}

// deadRedis is a client of a Redis that is not there.
var deadRedis = harness.DeadRedis
