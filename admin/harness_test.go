package admin_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/invoicing-ao/gateway/admin"
	"github.com/invoicing-ao/gateway/backend/gendata"
	"github.com/invoicing-ao/gateway/events"
	"github.com/invoicing-ao/gateway/gateway"
	"github.com/invoicing-ao/gateway/internal/apitest/harness"
	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
	"github.com/invoicing-ao/gateway/shape"
	"github.com/invoicing-ao/gateway/tenants"
	"github.com/invoicing-ao/gateway/usage"
)

// The admin API end to end: each test runs whole gateways (both listeners,
// built as `gateway serve` builds them, by internal/apitest/harness) on a
// real platform, and sees on the public listener what an admin call changed.
// This file names the harness's parts as this package's tests use them.

const (
	coA = gendata.DemoCompanyA
	coB = gendata.DemoCompanyB
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
	return worldOf(harness.NewWorld(t))
}

// newWorldOn is a world whose Redis is rdb (a replicated one, say), its
// keys under prefix.
func newWorldOn(t *testing.T, rdb *redis.Client, prefix string) *world {
	t.Helper()
	return worldOf(harness.NewWorldOn(t, rdb, prefix))
}

func worldOf(h *harness.World) *world {
	return &world{h: h, t: h.T, live: h.Live, test: h.Test, rdb: h.Redis, prefix: h.Prefix}
}

// instance is one running gateway: its own stores, caches and listeners.
type instance struct {
	h          *harness.Instance
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

// instanceConfig is the harness's, and the live limit under the name the
// tests set it by.
type instanceConfig struct {
	harness.Config
	liveLimit tenants.Limit
}

// withReplicas makes every change wait for n Redis replicas, each wait
// bounded by timeout.
func withReplicas(n int, timeout time.Duration) func(*instanceConfig) {
	return func(c *instanceConfig) { c.Replicas, c.ReplicaTimeout = n, timeout }
}

// withRetries gives the instance's webhooks a retry schedule of a test's
// length.
func withRetries(delays ...time.Duration) func(*instanceConfig) {
	return func(c *instanceConfig) { c.Schedule = delays }
}

// start runs an instance, its webhooks delivered to this machine; opts
// adjust its configuration.
func (w *world) start(opts ...func(*instanceConfig)) *instance {
	w.t.Helper()
	cfg := instanceConfig{Config: harness.Config{LocalWebhooks: true}, liveLimit: harness.DefaultLimit()}
	for _, o := range opts {
		o(&cfg)
	}
	hold := &holdback{}
	cfg.LiveLimit, cfg.WrapAdmin = cfg.liveLimit, hold.wrap
	h := w.h.Start(cfg.Config)
	return &instance{h: h, srv: h.Srv, adm: h.Adm, pub: h.Pub, admin: h.Admin, adminH: h.AdminH, clock: h.Clock,
		logs: h.Logs, usage: h.Usage, limiter: h.Limiter, shape: h.Shape, events: h.Events, hold: hold,
		adminToken: h.AdminToken}
}

// runEvents runs the instance's events (detection and delivery) until the
// test ends.
func (in *instance) runEvents(t *testing.T) { in.h.RunEvents(t) }

// key creates a key through the same path as the admin API and the CLI.
func (in *instance) key(t *testing.T, company string, mode invoicing.Mode, scopes string) admin.KeyView {
	t.Helper()
	return in.h.Key(t, testActor, company, mode, scopes)
}

const allScopes = "invoices:read,clients:read,clients:write"

// testActor names the tests in the audit log.
const testActor = "test@admin-tests"

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

// logLine is the access log line of a request id.
func logLine(t *testing.T, in *instance, requestID string) map[string]any {
	t.Helper()
	return harness.LogLine(t, in.logs, requestID)
}
