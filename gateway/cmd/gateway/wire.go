package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/invoicing-ao/gateway/audit"
	"github.com/invoicing-ao/gateway/authz"
	"github.com/invoicing-ao/gateway/backend"
	"github.com/invoicing-ao/gateway/gateway"
	"github.com/invoicing-ao/gateway/idempotency"
	"github.com/invoicing-ao/gateway/tenants"
	usagecounter "github.com/invoicing-ao/gateway/usage"
)

// deps is everything a running gateway (or a management command) talks to.
type deps struct {
	rdb        redis.UniversalClient
	live, test *backend.Store
	keys       *authz.Keyring
	limiter    *tenants.Limiter
	server     *gateway.Server
	usage      *usagecounter.Counter
}

// connect opens Redis and both databases and builds the server on them.
func connect(ctx context.Context, cfg Config, logger *slog.Logger) (*deps, error) {
	// A single Redis, Sentinel or Cluster by the URL's scheme; every form
	// keeps ContextTimeoutEnabled (redisurl.go).
	rdb, err := newRedisClient(cfg.RedisURL)
	if err != nil {
		return nil, fmt.Errorf("setting %s: %w", settingName("RedisURL"), err)
	}
	return connectWith(ctx, cfg, logger, rdb)
}

// connectWith builds the dependencies on an existing Redis client (the demo's
// in-process Redis, or a real one).
func connectWith(ctx context.Context, cfg Config, logger *slog.Logger, rdb redis.UniversalClient, opts ...wireOption) (*deps, error) {
	o := wireOptionsOf(opts)
	d := &deps{rdb: rdb}
	var err error
	open := func(field, url string) (*backend.Store, error) {
		st, err := backend.Open(ctx, backend.Config{URL: url, MaxConns: cfg.DatabaseMaxConns, QueryTimeout: cfg.QueryTimeout, TracerProvider: o.tp,
			ReplicaURL: replicaOf(cfg, field), ReadYourWritesWindow: cfg.ReadYourWritesWindow,
			BreakerFailures: cfg.BreakerFailures, BreakerOpenFor: cfg.BreakerOpenFor,
			OnBreakerChange: func(from, to string) {
				logger.Warn("database circuit breaker", "database", databaseName(field), "from", from, "to", to)
			}})
		if err != nil {
			return nil, fmt.Errorf("setting %s: %s: %w", settingName(field), redactURL(url), err)
		}
		return st, nil
	}
	if d.live, err = open("LiveDatabaseURL", cfg.LiveDatabaseURL); err != nil {
		d.Close()
		return nil, err
	}
	if d.test, err = open("TestDatabaseURL", cfg.TestDatabaseURL); err != nil {
		d.Close()
		return nil, err
	}
	origins, err := gateway.ParseOrigins(cfg.CORSAllowedOrigins) // validated with the configuration
	if err != nil {
		d.Close()
		return nil, fmt.Errorf("setting %s: %w", settingName("CORSAllowedOrigins"), err)
	}
	proxies, err := gateway.ParseTrustedProxies(cfg.TrustedProxies) // validated with the configuration
	if err != nil {
		d.Close()
		return nil, fmt.Errorf("setting %s: %w", settingName("TrustedProxies"), err)
	}
	d.keys = authz.New(authz.Config{Redis: rdb, Prefix: cfg.RedisPrefix + "authz:", CacheTTL: cfg.KeyCacheTTL, StaleTTL: cfg.KeyStaleTTL, Logger: logger, TracerProvider: o.tp})
	d.limiter = tenants.New(tenants.Config{
		Redis:          rdb,
		Prefix:         cfg.RedisPrefix + "tenants:",
		LiveDefault:    tenants.Limit{Rate: cfg.LiveRate, Burst: cfg.LiveBurst},
		TestDefault:    tenants.Limit{Rate: cfg.TestRate, Burst: cfg.TestBurst},
		Logger:         logger,
		TracerProvider: o.tp,
	})
	d.usage = usagecounter.New(usagecounter.Config{Redis: rdb, Prefix: cfg.RedisPrefix + "usage:", Logger: logger})
	d.server = gateway.New(gateway.Config{
		Live: d.live, Test: d.test, Keys: d.keys, Limiter: d.limiter,
		Guard:      tenants.NewGuard(tenants.GuardConfig{PerCompany: cfg.InflightPerCompany, Total: cfg.InflightTotal}),
		AdminToken: cfg.AdminToken, CursorSecret: cfg.CursorSecret, Logger: logger,
		CORSAllowedOrigins: origins,
		TracerProvider:     o.tp, Usage: d.usage, RedisPool: rdb,
		Idempotency:    idempotency.New(idempotency.Config{Redis: rdb, Prefix: cfg.RedisPrefix + "idem:"}),
		Audit:          audit.New(audit.Config{Redis: rdb, Prefix: cfg.RedisPrefix + "audit:"}),
		TrustedProxies: proxies,
	})
	return d, nil
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
	if d.rdb != nil {
		_ = d.rdb.Close()
	}
}

// redactURL hides a password in a database URL before it reaches a message.
func redactURL(u string) string {
	at := strings.LastIndex(u, "@")
	scheme := strings.Index(u, "://")
	if at < 0 || scheme < 0 || at < scheme {
		return u
	}
	creds := u[scheme+3 : at]
	if i := strings.IndexByte(creds, ':'); i >= 0 {
		return u[:scheme+3] + creds[:i] + ":***" + u[at:]
	}
	return u
}

var errUsage = errors.New("usage")
