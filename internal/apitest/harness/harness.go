// Package harness runs whole gateways for the end-to-end tests of both
// listeners: a world (live and sandbox PostgreSQL databases with the demo
// data, one Redis prefix, the gateway's own database) that any number of
// instances share, each instance built as `gateway serve` builds it
// (cmd/gateway), with both listeners on httptest servers and a clock the
// test moves. Do sends a request and checks
// the answer against the OpenAPI document (apitest.Check). It is imported by
// tests only, and keeps no state of its own: everything a test makes is the
// test's, so tests using it may run in parallel.
package harness

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"path/filepath"
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
	"github.com/invoicing-ao/gateway/internal/sharedkey"
	"github.com/invoicing-ao/gateway/internal/sqldb"
	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
	"github.com/invoicing-ao/gateway/shape"
	"github.com/invoicing-ao/gateway/tenants"
	"github.com/invoicing-ao/gateway/usage"
	"github.com/invoicing-ao/gateway/web"
)

// World is one platform (live and sandbox PostgreSQL databases with the
// demo data, one Redis prefix, and the gateway's own database) that any
// number of instances share.
type World struct {
	T          *testing.T
	Live, Test string // database URLs
	Redis      *redis.Client
	Prefix     string
	// History is the gateway's own database (the audit log's), its
	// migrations applied: a SQLite file of the test's own, which every
	// instance of the world shares as a deployment's instances share
	// theirs.
	History *sqldb.DB
}

// NewWorld is a world of the test's own: its databases, and a Redis prefix.
func NewWorld(t *testing.T) *World {
	t.Helper()
	rdb, prefix := testenv.Redis(t)
	return NewWorldOn(t, rdb, prefix)
}

// NewWorldOn is a world whose Redis is rdb (a replicated one, say), its keys
// under prefix.
func NewWorldOn(t *testing.T, rdb *redis.Client, prefix string) *World {
	t.Helper()
	w := &World{T: t, Live: testenv.Postgres(t), Test: testenv.Postgres(t), Redis: rdb, Prefix: prefix}
	if _, err := gendata.SetUpSmall(context.Background(), w.Live, w.Test, 7); err != nil {
		t.Fatalf("demo data: %v", err)
	}
	w.History = openHistory(t)
	return w
}

// openHistory opens a gateway database of the test's own, with every
// track's migrations applied as serve applies them.
func openHistory(t *testing.T) *sqldb.DB {
	t.Helper()
	ctx := context.Background()
	db, err := sqldb.Open(ctx, sqldb.Config{URL: "sqlite:" + filepath.Join(t.TempDir(), "gateway.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	if _, err := db.Apply(ctx, audit.Migrations()); err != nil {
		t.Fatal(err)
	}
	return db
}

// DefaultLimit is both modes' rate limit unless a test sets its own: more
// than any test sends.
func DefaultLimit() tenants.Limit { return tenants.Limit{Rate: 1000, Burst: 1000} }

// DefaultAdminToken is the admin listener's token unless a test sets its own.
const DefaultAdminToken = "admin-secret-token"

// Config is what a test may change of an instance; the zero Config is an
// instance as the binary builds it, on the world's Redis.
type Config struct {
	Redis                redis.UniversalClient // nil: the world's
	LiveLimit, TestLimit tenants.Limit         // zero: DefaultLimit
	AdminToken           string                // empty: DefaultAdminToken
	Store                func(*backend.Config) // adjusts both databases' settings
	NoIdempotency        bool                  // no idempotency store
	TrustedProxies       []netip.Prefix
	// LocalWebhooks delivers webhooks to receivers on this machine (plain
	// http, loopback), with ticks, settle and sweep short enough for a test;
	// false keeps the events service's defaults.
	LocalWebhooks bool
	Schedule      []time.Duration // the webhooks' retries; nil: events.DefaultSchedule
	// Replicas is the Redis replicas each change waits for, each wait
	// bounded by ReplicaTimeout.
	Replicas       int
	ReplicaTimeout time.Duration
	// WrapAdmin, if set, wraps the admin listener's handler (to hold back
	// an answer, say); Instance.AdminH stays the unwrapped one.
	WrapAdmin func(http.Handler) http.Handler
	// ExpensiveReads is admin.Config's: zero, its default.
	ExpensiveReads int
}

// Instance is one running gateway: its own stores, caches and listeners.
type Instance struct {
	Srv        *gateway.Server
	Adm        *admin.Service
	Pub, Admin *httptest.Server
	AdminH     http.Handler // the admin listener's handler, as Admin serves it
	Keys       *authz.Keyring
	Limiter    *tenants.Limiter
	Audit      *audit.Log
	Shape      *shape.Store // the traffic's shape: recorded only when a test flushes it
	Clock      *testenv.Clock
	Logs       *testenv.SyncBuffer
	Live, Test *backend.Store
	Usage      *usage.Counter  // flushed only when a test says so
	Events     *events.Service // the feed and webhooks; run only when a test says so (RunEvents)
	AdminToken string
}

// Start runs an instance on the world, configured by cfg; everything it
// opens is closed when the test ends.
func (w *World) Start(cfg Config) *Instance {
	t := w.T
	t.Helper()
	cfg = cfg.withDefaults(w)
	in := &Instance{Clock: testenv.NewClock(time.Now()), Logs: &testenv.SyncBuffer{}, AdminToken: cfg.AdminToken}
	logger := slog.New(slog.NewJSONHandler(in.Logs, nil))
	in.Live, in.Test = w.openStores(cfg)
	in.adapters(cfg, w, logger)
	// The instance's metrics, as the binary registers them (cmd/gateway).
	reg := prometheus.NewRegistry()
	reg.MustRegister(in.Keys.Collector(), in.Limiter.Collector(), in.Live.Collector("live"), in.Test.Collector("test"))
	var err error
	if in.Events, err = events.New(eventsConfig(cfg, w.Prefix, logger, in.Live, in.Test)); err != nil {
		t.Fatal(err)
	}
	// The instance's clock drives keys' expiry and the views of it alike.
	gcfg := gateway.Config{Live: in.Live, Test: in.Test, Keys: in.Keys, Limiter: in.Limiter,
		Guard: tenants.NewGuard(tenants.GuardConfig{}), Logger: logger, Now: in.Clock.Now, Usage: in.Usage,
		Feed: in.Events, TrustedProxies: cfg.TrustedProxies, Metrics: reg,
		// The world's cursor key, in its Redis, as the binary keeps the
		// deployment's: a cursor one instance made, another takes.
		CursorKeys: sharedkey.New(sharedkey.Config{Redis: cfg.Redis, Name: w.Prefix + "cursor:key"})}
	if !cfg.NoIdempotency {
		gcfg.Idempotency = idempotency.New(idempotency.Config{Redis: cfg.Redis, Prefix: w.Prefix + "idem:"})
	}
	in.Srv = gateway.New(gcfg)
	in.Adm = admin.New(admin.Config{Keys: in.Keys, Limiter: in.Limiter, Usage: in.Usage, Shape: in.Shape,
		Companies: in.Live, Directory: in.Live, Token: cfg.AdminToken, Webhooks: in.Events, Audit: in.Audit,
		Logger: logger, Now: in.Clock.Now, ExpensiveReads: cfg.ExpensiveReads})
	in.Pub = httptest.NewServer(in.Srv.Handler())
	in.AdminH = AdminListener(logger, in.Clock.Now, in.Srv, reg, in.Adm)
	in.Admin = httptest.NewServer(cfg.WrapAdmin(in.AdminH))
	t.Cleanup(func() {
		in.Pub.Close()
		in.Admin.Close()
		_ = in.Usage.Close(context.Background())
		_ = in.Keys.Close()
	})
	return in
}

func (cfg Config) withDefaults(w *World) Config {
	if cfg.Redis == nil {
		cfg.Redis = w.Redis
	}
	if cfg.LiveLimit == (tenants.Limit{}) {
		cfg.LiveLimit = DefaultLimit()
	}
	if cfg.TestLimit == (tenants.Limit{}) {
		cfg.TestLimit = DefaultLimit()
	}
	if cfg.AdminToken == "" {
		cfg.AdminToken = DefaultAdminToken
	}
	if cfg.WrapAdmin == nil {
		cfg.WrapAdmin = func(h http.Handler) http.Handler { return h }
	}
	return cfg
}

// openStores opens the live and sandbox databases, as cfg.Store adjusts
// their settings; they are closed when the test ends.
func (w *World) openStores(cfg Config) (live, test *backend.Store) {
	open := func(url string) *backend.Store {
		c := backend.Config{URL: url}
		if cfg.Store != nil {
			cfg.Store(&c)
		}
		st, err := backend.Open(context.Background(), c)
		if err != nil {
			w.T.Fatal(err)
		}
		w.T.Cleanup(st.Close) // after the listeners', registered later
		return st
	}
	live = open(w.Live)
	test = open(w.Test)
	return live, test
}

// adapters makes the instance's Redis adapters, each under its own part of
// the world's prefix, and its audit log on the world's database.
func (in *Instance) adapters(cfg Config, w *World, logger *slog.Logger) {
	now, prefix := in.Clock.Now, w.Prefix
	in.Keys = authz.New(authz.Config{Redis: cfg.Redis, Prefix: prefix + "authz:", Now: now, Logger: logger,
		MinReplicas: cfg.Replicas, ReplicaTimeout: cfg.ReplicaTimeout})
	in.Limiter = tenants.New(tenants.Config{Redis: cfg.Redis, Prefix: prefix + "tenants:", CountOffered: true,
		LiveDefault: cfg.LiveLimit, TestDefault: cfg.TestLimit, Logger: logger,
		MinReplicas: cfg.Replicas, ReplicaTimeout: cfg.ReplicaTimeout})
	in.Audit = audit.New(audit.Config{DB: w.History, Now: now})
	in.Shape = shape.New(shape.Config{Redis: cfg.Redis, Prefix: prefix + "shape:", Now: now, Logger: logger})
	in.Usage = usage.New(usage.Config{Redis: cfg.Redis, Prefix: prefix + "usage:", FlushEvery: time.Hour, Now: now, Logger: logger})
}

// eventsConfig is the events service's configuration: the feed of both
// databases, and webhooks as cfg says.
func eventsConfig(cfg Config, prefix string, logger *slog.Logger, live, test *backend.Store) events.Config {
	ec := events.Config{Redis: cfg.Redis, Prefix: prefix + "events:", Logger: logger,
		Sources:  map[invoicing.Mode]events.Source{invoicing.Live: live.Changes(), invoicing.Test: test.Changes()},
		Schedule: cfg.Schedule, MinReplicas: cfg.Replicas, ReplicaTimeout: cfg.ReplicaTimeout}
	if cfg.LocalWebhooks {
		ec.AllowHTTP, ec.AllowedNetworks = true, []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
		// A settle this short is passed by a commit that a busy machine
		// delays; the sweep, every 5 s over the last 10 s, finds it as it
		// would in production, instead of 10 minutes later.
		ec.Tick, ec.Settle, ec.Sweep, ec.Timeout = 20*time.Millisecond, 300*time.Millisecond, 10*time.Second, 2*time.Second
	}
	return ec
}

// AdminListener is the admin listener as the binary assembles it
// (cmd/gateway/listeners.go): the instance's health and metrics, and the
// admin API.
func AdminListener(logger *slog.Logger, now func() time.Time, srv *gateway.Server, reg *prometheus.Registry, adm *admin.Service) http.Handler {
	return web.Listener(web.Config{Logger: logger, Now: now, HostCheck: true}, srv.Health, func(rt *web.Router) {
		rt.Handle(http.MethodGet, "/metrics", web.MetricsRoute(reg))
	}, adm.Routes)
}

// RunEvents runs the instance's events (detection and delivery) until the
// test ends.
func (in *Instance) RunEvents(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); in.Events.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

// Key creates a key through the same path as the admin API and the CLI,
// actor naming the test in the audit log.
func (in *Instance) Key(t *testing.T, actor, company string, mode invoicing.Mode, scopes string) admin.KeyView {
	t.Helper()
	sc, err := authz.ParseScopes(scopes)
	if err != nil {
		t.Fatal(err)
	}
	v, err := in.Adm.Keys.CreateKey(context.Background(), actor, admin.KeySpec{CompanyID: company, Mode: mode, Scopes: sc, Name: "test"})
	if err != nil {
		t.Fatalf("create key: %v", err)
	}
	return v
}
