package main

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/trace"

	"github.com/invoicing-ao/gateway/admin"
	"github.com/invoicing-ao/gateway/audit"
	"github.com/invoicing-ao/gateway/authz"
	"github.com/invoicing-ao/gateway/backend"
	"github.com/invoicing-ao/gateway/cmd/gateway/internal/config"
	"github.com/invoicing-ao/gateway/events"
	"github.com/invoicing-ao/gateway/gateway"
	"github.com/invoicing-ao/gateway/idempotency"
	"github.com/invoicing-ao/gateway/internal/sharedkey"
	"github.com/invoicing-ao/gateway/invoicing"
	"github.com/invoicing-ao/gateway/shape"
	"github.com/invoicing-ao/gateway/tenants"
	usagecounter "github.com/invoicing-ao/gateway/usage"
)

// deps is everything a running gateway (or a management command) talks to.
type deps struct {
	cfg        config.Config // what it was made of
	rdb        redis.UniversalClient
	live, test *backend.Store
	keys       *authz.Keyring
	limiter    *tenants.Limiter
	server     *gateway.Server // the public API
	admin      *admin.Service  // keys, limits, usage, audit and webhooks: the admin API and the CLI
	events     *events.Service // webhooks: run by serve and demo, managed through admin
	// history is the gateway's own database (historyDatabaseURL), opened
	// once for every owner of tables there: history.DB is the *sqldb.DB
	// (the audit log's now, the events' history's to come) and
	// history.Ready says when its schema is this binary's (serve migrates
	// it once it answers: historydb.go). Nil for a command that does not
	// need it.
	history *historyDB
	audit   *audit.Log // on history; nil with it

	usage      *usagecounter.Counter
	guard      *redisGuard          // what Redis allows, and the replicas changes wait for
	shape      *shape.Store         // each company's traffic per second: recorded by serve and demo (serveOn)
	metrics    *prometheus.Registry // what the admin listener serves on /metrics (listeners.go)
	adminHosts []string             // the admin listener's names (adminHandler)
	cursorKey  *sharedkey.Key       // the cursors' key kept in Redis; nil with cursorSecret set
	logger     *slog.Logger
}

// connect opens Redis and both databases and builds the server and the
// administration on them.
func connect(ctx context.Context, cfg config.Config, logger *slog.Logger, opts ...wireOption) (*deps, error) {
	// A single Redis, Sentinel or Cluster by the URL's scheme; every form
	// keeps ContextTimeoutEnabled (internal/config/redisurl.go).
	rdb, err := config.NewRedisClient(cfg.RedisURL)
	if err != nil {
		return nil, fmt.Errorf("setting %s: %w", config.SettingName("RedisURL"), err)
	}
	return connectWith(ctx, cfg, logger, rdb, opts...)
}

// connectWith builds the dependencies on an existing Redis client (the demo's
// in-process Redis, or a real one). Unless withLazy, each dependency it opens
// must answer now, or it fails naming the one that does not and why.
func connectWith(ctx context.Context, cfg config.Config, logger *slog.Logger, rdb redis.UniversalClient, opts ...wireOption) (*deps, error) {
	o := wireOptionsOf(opts)
	d := &deps{cfg: cfg, rdb: rdb, metrics: newRegistry(), logger: logger}
	if o.needs&config.NeedRedis != 0 && !o.lazy {
		if err := pingRedis(ctx, rdb); err != nil {
			d.Close()
			return nil, &depError{what: "Redis", setting: config.SettingName("RedisURL"), target: config.RedactURL(cfg.RedisURL), err: err}
		}
	}
	live, test, err := d.openStores(ctx, cfg, logger, o)
	if err != nil {
		d.Close()
		return nil, err
	}
	if err := d.openHistory(ctx, cfg, o); err != nil {
		d.Close()
		return nil, err
	}
	origins, err := invoicing.ParseOrigins(cfg.CORSAllowedOrigins) // validated with the configuration
	if err != nil {
		d.Close()
		return nil, fmt.Errorf("setting %s: %w", config.SettingName("CORSAllowedOrigins"), err)
	}
	proxies, err := authz.ParseNetworks(cfg.TrustedProxies) // validated with the configuration
	if err != nil {
		d.Close()
		return nil, fmt.Errorf("setting %s: %w", config.SettingName("TrustedProxies"), err)
	}
	d.adminHosts, err = invoicing.ParseHosts(cfg.AdminHosts) // validated with the configuration
	if err != nil {
		d.Close()
		return nil, fmt.Errorf("setting %s: %w", config.SettingName("AdminHosts"), err)
	}
	// Every administrative change waits for the same replicas: the
	// guard's target, which follows Redis's topology (redisguard.go).
	d.guard = newRedisGuard(cfg, logger)
	d.openAdapters(cfg, logger, o)
	var cursorKeys gateway.CursorKeys // nil with a cursor secret set
	if cfg.CursorSecret == "" {
		d.cursorKey = sharedkey.New(sharedkey.Config{Redis: rdb, Name: cursorKeyName(cfg)})
		cursorKeys = d.cursorKey
	}
	d.server = gateway.New(gateway.Config{
		Live: live, Test: test, Keys: d.keys, Limiter: d.limiter,
		Guard:        tenants.NewGuard(tenants.GuardConfig{PerCompany: cfg.InflightPerCompany, Total: cfg.InflightTotal}),
		CursorSecret: cfg.CursorSecret, CursorKeys: cursorKeys, Logger: logger,
		CORSAllowedOrigins: origins,
		TracerProvider:     o.tp, Usage: d.usage,
		Idempotency:    idempotency.New(idempotency.Config{Redis: rdb, Prefix: cfg.RedisPrefix + "idem:"}),
		TrustedProxies: proxies, RedisDurability: d.guard.readiness, Metrics: d.metrics,
		Feed: eventsFeed{d}, HistoryDatabase: d.historyPing(),
	})
	if err := d.guard.watch(ctx, cfg, rdb, d.metrics, o.needs&config.NeedRedis != 0); err != nil { // a mistake of ours
		d.Close()
		return nil, err
	}
	if err := d.openEvents(cfg, logger, o); err != nil {
		d.Close()
		return nil, err
	}
	// live is a nil interface without the live database (the Redis-only
	// commands): company ids are then checked for their form only.
	var dir admin.Directory // the console's company search: nil without the live database
	if d.live != nil {
		dir = d.live
	}
	var auditLog admin.AuditLog = noAuditLog{} // a command that opens no gateway database records no change
	if d.audit != nil {
		auditLog = d.audit
	}
	d.admin = admin.New(admin.Config{Keys: d.keys, Limiter: d.limiter, Usage: d.usage, Shape: d.shape, Companies: live, Directory: dir,
		Audit:    auditLog,
		Webhooks: d.events, Token: cfg.AdminToken, Logger: logger})
	return d, nil
}

// openHistory opens the gateway's own database when the command needs it,
// and its audit log. A command brings its schema up to date at once (and
// fails naming why it cannot); serve (withLazy) opens it whether it
// answers or not, and migrates it once it does (watchHistory).
func (d *deps) openHistory(ctx context.Context, cfg config.Config, o wireOptions) error {
	if o.needs&config.NeedHistory == 0 {
		return nil
	}
	h, err := openHistory(ctx, cfg, o.lazy)
	if err != nil {
		return err
	}
	d.history = h
	if !o.lazy {
		if _, err := h.migrate(ctx); err != nil {
			return err
		}
	}
	d.audit = audit.New(audit.Config{DB: h.DB, Ready: h.Ready})
	return nil
}

// historyPing is /readyz's check of the gateway's database; nil without one.
func (d *deps) historyPing() func(context.Context) error {
	if d.history == nil {
		return nil
	}
	return d.history.Ping
}

// cursorKeyName is the Redis key of the deployment's cursor key, made by
// the first instance that needs it when cursorSecret is not set.
func cursorKeyName(cfg config.Config) string { return cfg.RedisPrefix + "cursor:key" }

// cursorKeying names, for the start-up line, what keys the API's cursors.
func cursorKeying(cfg config.Config) string {
	if cfg.CursorSecret != "" {
		return "cursorSecret"
	}
	return "the deployment's own key, made once in Redis (" + cursorKeyName(cfg) + ")"
}

// openAdapters makes d's keys, limiter, traffic shape and usage on d's
// Redis, their changes confirmed as every administrative change is
// (d.guard's target); the keys, the limiter and the Redis pool report on
// d's registry.
func (d *deps) openAdapters(cfg config.Config, logger *slog.Logger, o wireOptions) {
	target, replicaTimeout := d.guard.target, cfg.RedisReplicaTimeout
	d.keys = authz.New(authz.Config{Redis: d.rdb, Prefix: cfg.RedisPrefix + "authz:", CacheTTL: cfg.KeyCacheTTL, StaleTTL: cfg.KeyStaleTTL, Logger: logger, TracerProvider: o.tp,
		RefuseLegacyForm: cfg.KeyRefuseLegacyForm, Timeout: o.redisTimeout,
		ReplicaTarget: target, ReplicaTimeout: replicaTimeout})
	d.limiter = tenants.New(tenants.Config{
		Redis:          d.rdb,
		Prefix:         cfg.RedisPrefix + "tenants:",
		LiveDefault:    tenants.Limit{Rate: cfg.LiveRate, Burst: cfg.LiveBurst},
		TestDefault:    tenants.Limit{Rate: cfg.TestRate, Burst: cfg.TestBurst},
		RedisTimeout:   o.redisTimeout,
		Logger:         logger,
		TracerProvider: o.tp,
		ReplicaTarget:  target,
		ReplicaTimeout: replicaTimeout,
		CountOffered:   true, // taken by d.shape while serving
	})
	d.shape = shape.New(shape.Config{Redis: d.rdb, Prefix: cfg.RedisPrefix + "shape:", Logger: logger, AddByScript: o.noBitfield})
	d.usage = usagecounter.New(usagecounter.Config{Redis: d.rdb, Prefix: cfg.RedisPrefix + "usage:", Logger: logger})
	d.metrics.MustRegister(d.keys.Collector(), d.limiter.Collector(), redisPoolCollector{d.rdb})
}

// openStores opens the databases the command needs (o.needs) into d, each
// reporting its breaker and pool on /metrics, and returns them as the
// gateway's stores: nil interfaces for those not needed.
func (d *deps) openStores(ctx context.Context, cfg config.Config, logger *slog.Logger, o wireOptions) (live, test gateway.Store, err error) {
	for _, db := range []struct {
		field, name string // the setting, and the database's label on /metrics
		need        config.Needs
		st          **backend.Store
		as          *gateway.Store
	}{{"LiveDatabaseURL", "live", config.NeedLive, &d.live, &live}, {"TestDatabaseURL", "test", config.NeedTest, &d.test, &test}} {
		if o.needs&db.need == 0 {
			continue
		}
		st, err := openStore(ctx, cfg, db.field, logger, o)
		if err != nil {
			return nil, nil, err
		}
		*db.st, *db.as = st, st
		d.metrics.MustRegister(st.Collector(db.name))
	}
	return live, test, nil
}

// openEvents makes d's events service on d's Redis and databases, its
// metrics on d's registry and its changes confirmed as every
// administrative change is (d.guard's target).
func (d *deps) openEvents(cfg config.Config, logger *slog.Logger, o wireOptions) error {
	ec := eventsConfig(cfg)
	ec.Redis, ec.Logger, ec.Sources = d.rdb, logger, map[invoicing.Mode]events.Source{}
	ec.Metrics, ec.TracerProvider = d.metrics, o.tp
	var err error
	if ec.Secrets, err = cfg.SecretsKeyring(); err != nil { // checked with the configuration
		return err
	}
	ec.ReplicaTarget, ec.ReplicaTimeout = d.guard.target, cfg.RedisReplicaTimeout
	if d.live != nil {
		ec.Sources[invoicing.Live] = d.live.Changes()
	}
	if d.test != nil {
		ec.Sources[invoicing.Test] = d.test.Changes()
	}
	d.events, err = events.New(ec) // the settings were checked: an error is a mistake of ours
	return err
}

// openStore opens the database of a database setting; see connectWith.
func openStore(ctx context.Context, cfg config.Config, field string, logger *slog.Logger, o wireOptions) (*backend.Store, error) {
	url := reflect.ValueOf(cfg).FieldByName(field).String()
	st, err := backend.Open(ctx, backend.Config{URL: url, MaxConns: cfg.DatabaseMaxConns, QueryTimeout: cfg.QueryTimeout, TracerProvider: o.tp,
		ReplicaURL: cfg.ReplicaOf(field), ReadYourWritesWindow: cfg.ReadYourWritesWindow,
		BreakerFailures: cfg.BreakerFailures, BreakerOpenFor: cfg.BreakerOpenFor, Lazy: o.lazy,
		OnBreakerChange: func(from, to string) {
			logger.Warn("database circuit breaker", "database", databaseName(field), "from", from, "to", to)
		}})
	if err != nil {
		return nil, &depError{what: "the " + databaseName(field) + " database", setting: config.SettingName(field), target: config.RedactURL(url), err: err}
	}
	return st, nil
}

// pingRedis asks Redis for an answer within a few seconds.
func pingRedis(ctx context.Context, rdb redis.UniversalClient) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	return rdb.Ping(ctx).Err()
}

// wireOption adjusts what connectWith builds.
type wireOption func(*wireOptions)

type wireOptions struct {
	tp           trace.TracerProvider // nil: otel's global provider
	needs        config.Needs         // what to open; zero means everything
	lazy         bool                 // start whatever is down (serve)
	redisTimeout time.Duration        // the Redis deadline of a rate-limit decision and of a key's verification; zero: tenants' and authz's defaults
	noBitfield   bool                 // the Redis has no BITFIELD (the demo's miniredis)
}

// withTracerProvider makes every component trace with tp instead of the
// global provider (tests run several gateways with their own receivers).
func withTracerProvider(tp trace.TracerProvider) wireOption {
	return func(o *wireOptions) { o.tp = tp }
}

// only opens what n needs: a command that needs Redis only opens no
// database.
func only(n config.Needs) wireOption {
	return func(o *wireOptions) { o.needs = n }
}

// withLazy starts with whatever is down: each database and Redis is served
// as unavailable until it answers (serve: health.go watches and logs them).
func withLazy() wireOption {
	return func(o *wireOptions) { o.lazy = true }
}

// withRedisTimeout sets the Redis deadline of each rate-limit decision and
// each key's verification (the demo's in-process Redis: demo.go).
func withRedisTimeout(d time.Duration) wireOption {
	return func(o *wireOptions) { o.redisTimeout = d }
}

// withoutBitfield records the traffic's shape with a script instead of
// BITFIELD, which the demo's in-process Redis lacks.
func withoutBitfield() wireOption {
	return func(o *wireOptions) { o.noBitfield = true }
}

func wireOptionsOf(opts []wireOption) wireOptions {
	o := wireOptions{needs: config.NeedAll}
	for _, f := range opts {
		f(&o)
	}
	return o
}

// databaseName names a database setting's database in logs.
func databaseName(field string) string {
	if field == "LiveDatabaseURL" {
		return "live"
	}
	return "sandbox"
}

// Close releases what connect opened.
func (d *deps) Close() {
	if d.usage != nil { // before Redis closes: the last second's counts
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = d.usage.Close(ctx) // logged by usage
		cancel()
	}
	if d.keys != nil {
		_ = d.keys.Close()
	}
	if d.live != nil {
		d.live.Close()
	}
	if d.test != nil {
		d.test.Close()
	}
	d.history.Close() // after the events and the listeners, which use it, have stopped
	if d.rdb != nil {
		_ = d.rdb.Close()
	}
}
