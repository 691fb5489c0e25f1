package gateway

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/invoicing-ao/gateway/authz"
	"github.com/invoicing-ao/gateway/backend"
	"github.com/invoicing-ao/gateway/invoicing"
	"github.com/invoicing-ao/gateway/tenants"
)

// Optional abilities of the dependencies, reported on /metrics when present
// (backend.Store, authz.Keyring and go-redis clients have them; test doubles
// need not).
type (
	breakerStater interface{ BreakerState() string }
	poolStater    interface{ PoolStats() backend.PoolStats }
	cacheStater   interface{ Stats() authz.CacheStats }
	lookupStater  interface{ LookupStats() authz.LookupStats }
	// fallbacker is tenants.Limiter's: true while Redis is unreachable and
	// each instance decides rate limits alone (limits are then per instance).
	fallbacker    interface{ Fallback() bool }
	limiterStater interface{ Stats() tenants.Stats }
	// RedisPool is a Redis client's connection pool (redis.UniversalClient).
	RedisPool interface{ PoolStats() *redis.PoolStats }
)

// metrics are the rate limit's decisions, and the state of the
// dependencies, registered on the registry Config.Metrics names, not the
// process-wide default: several servers (tests) can live in one process. No
// metric has a company label: companies are unbounded; per-company counts
// are usage's.
type metrics struct {
	ratelimit *prometheus.CounterVec
	// The series each decision touches, found once: a vector's lookup by
	// label values hashes them and takes the vector's lock on every call.
	decisions [2][2][3]prometheus.Counter // [mode index][allowed][source]
}

// Decision labels, indexed as metrics.decisions.
var (
	decisionNames = [2]string{"rejected", "allowed"}
	sourceNames   = [3]string{"redis", "lease", "local"}
)

func newMetrics(s *Server, redisPool RedisPool, reg prometheus.Registerer) *metrics {
	m := &metrics{
		ratelimit: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_ratelimit_decisions_total",
			Help: "Rate-limit decisions by mode, outcome (allowed, rejected) and decider (redis, lease: this instance's leased tokens, local: fallback).",
		}, []string{"mode", "decision", "source"}),
	}
	for _, mode := range []invoicing.Mode{invoicing.Live, invoicing.Test} {
		for a, decision := range decisionNames {
			for src, source := range sourceNames {
				m.decisions[mode.Index()][a][src] = m.ratelimit.WithLabelValues(string(mode), decision, source)
			}
		}
	}
	if reg != nil {
		reg.MustRegister(m.ratelimit, &stateCollector{s: s, redis: redisPool})
	}
	return m
}

func (m *metrics) decided(mode invoicing.Mode, d tenants.Decision) {
	allowed, source := 0, 0 // rejected, redis
	if d.Allowed {
		allowed = 1
	}
	switch {
	case d.Local:
		source = 2
	case d.Leased:
		source = 1
	}
	if !mode.Valid() { // not from a verified key: counted, never cached
		m.ratelimit.WithLabelValues(string(mode), decisionNames[allowed], sourceNames[source]).Inc()
		return
	}
	m.decisions[mode.Index()][allowed][source].Inc()
}

// stateCollector reads the state of the dependencies at scrape time: breaker
// states, pools and key-cache counts cost nothing between scrapes.
type stateCollector struct {
	s     *Server
	redis RedisPool
}

var (
	descBreaker = prometheus.NewDesc("gateway_database_breaker_state",
		"1 for the current state of each database's circuit breaker (closed, half-open, open).", []string{"database", "state"}, nil)
	descDBConns = prometheus.NewDesc("gateway_database_pool_connections",
		"Connections of each database pool, by state (idle, in_use).", []string{"database", "state"}, nil)
	descDBMax = prometheus.NewDesc("gateway_database_pool_max_connections",
		"The bound of each database pool.", []string{"database"}, nil)
	descDBAcquires = prometheus.NewDesc("gateway_database_pool_acquires_total",
		"Connections handed out by each database pool (PostgreSQL only).", []string{"database"}, nil)
	descDBWaits = prometheus.NewDesc("gateway_database_pool_waits_total",
		"Acquisitions that waited for a connection, by database.", []string{"database"}, nil)
	descDBWait = prometheus.NewDesc("gateway_database_pool_wait_seconds_total",
		"Time spent waiting for a connection, by database.", []string{"database"}, nil)
	descKeyCache = prometheus.NewDesc("gateway_key_cache_lookups_total",
		"API key verifications by cache outcome (hit, miss, negative, stale).", []string{"result"}, nil)
	descKeyRenewals = prometheus.NewDesc("gateway_key_cache_renewals_total",
		"Keys in use read again ahead of their cache expiry, off the request path, by result (renewed, dropped: no longer active, failed: Redis did not answer).", []string{"result"}, nil)
	descKeyLookups = prometheus.NewDesc("gateway_key_lookups_total",
		"Redis lookups of API keys on the request path, by key (known: verified by this instance before; unknown: under the bound of lookups of unknown keys) and result (found; invalid: no record, revoked or of the other mode; failed: Redis did not answer).", []string{"key", "result"}, nil)
	descKeyRefused = prometheus.NewDesc("gateway_key_refused_total",
		"API keys refused without a Redis lookup, by reason: malformed, checksum, legacy_form (401 invalid_api_key); source_limit, instance_limit (over the bound of lookups of unknown keys: 429 key_lookups_limited).", []string{"reason"}, nil)
	descKeyLegacy = prometheus.NewDesc("gateway_key_legacy_form_verified_total",
		"Requests verified with an API key of the first form, without checksum: while it grows, refusing that form would lock keys out.", nil, nil)
	descRedisConns = prometheus.NewDesc("gateway_redis_pool_connections",
		"Connections of the Redis pool, by state (idle, total).", []string{"state"}, nil)
	descFallback = prometheus.NewDesc("gateway_ratelimit_fallback_active",
		"1 while this instance decides rate limits locally because Redis is unreachable, else 0.", nil, nil)
	descLimiterCalls = prometheus.NewDesc("gateway_ratelimit_redis_calls_total",
		"Rate-limit script calls sent to Redis (each exchanges the tokens of one or more companies).", nil, nil)
	descLimiterTokens = prometheus.NewDesc("gateway_ratelimit_lease_tokens_total",
		"Leased rate-limit tokens by event: leased (taken beyond the requests waiting), returned (unspent, given back), dropped (unspent, never given back).", []string{"event"}, nil)
	descRedisEvents = prometheus.NewDesc("gateway_redis_pool_events_total",
		"Redis pool events: hits (idle connection reused), misses (new connection), timeouts (no connection in time), waits, stale (closed as stale).", []string{"event"}, nil)
)

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descBreaker, descDBConns, descDBMax, descDBAcquires, descDBWaits, descDBWait, descKeyCache,
		descKeyRenewals, descKeyLookups, descKeyRefused, descKeyLegacy, descRedisConns, descRedisEvents, descFallback, descLimiterCalls, descLimiterTokens} {
		ch <- d
	}
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	gauge, counter := prometheus.GaugeValue, prometheus.CounterValue
	for _, db := range []struct {
		name string
		st   Store
	}{{"live", c.s.live}, {"test", c.s.test}} {
		if b, ok := db.st.(breakerStater); ok {
			cur := b.BreakerState()
			for _, state := range []string{"closed", "half-open", "open"} {
				v := 0.0
				if state == cur {
					v = 1
				}
				ch <- prometheus.MustNewConstMetric(descBreaker, gauge, v, db.name, state)
			}
		}
		if p, ok := db.st.(poolStater); ok {
			ps := p.PoolStats()
			ch <- prometheus.MustNewConstMetric(descDBConns, gauge, float64(ps.IdleConns), db.name, "idle")
			ch <- prometheus.MustNewConstMetric(descDBConns, gauge, float64(ps.InUseConns), db.name, "in_use")
			ch <- prometheus.MustNewConstMetric(descDBMax, gauge, float64(ps.MaxConns), db.name)
			ch <- prometheus.MustNewConstMetric(descDBAcquires, counter, float64(ps.Acquires), db.name)
			ch <- prometheus.MustNewConstMetric(descDBWaits, counter, float64(ps.Waits), db.name)
			ch <- prometheus.MustNewConstMetric(descDBWait, counter, ps.WaitTime.Seconds(), db.name)
		}
	}
	if k, ok := c.s.keys.(cacheStater); ok {
		st := k.Stats()
		for _, r := range []struct {
			name string
			n    uint64
		}{{"hit", st.Hits}, {"miss", st.Misses}, {"negative", st.Negative}, {"stale", st.Stale}} {
			ch <- prometheus.MustNewConstMetric(descKeyCache, counter, float64(r.n), r.name)
		}
		ch <- prometheus.MustNewConstMetric(descKeyRenewals, counter, float64(st.Renewed), "renewed")
		ch <- prometheus.MustNewConstMetric(descKeyRenewals, counter, float64(st.RenewDropped), "dropped")
		ch <- prometheus.MustNewConstMetric(descKeyRenewals, counter, float64(st.RenewFailed), "failed")
	}
	c.collectLookups(ch)
	c.collectLimiter(ch)
	if c.redis != nil {
		ps := c.redis.PoolStats()
		ch <- prometheus.MustNewConstMetric(descRedisConns, gauge, float64(ps.IdleConns), "idle")
		ch <- prometheus.MustNewConstMetric(descRedisConns, gauge, float64(ps.TotalConns), "total")
		for _, e := range []struct {
			name string
			n    uint32
		}{{"hit", ps.Hits}, {"miss", ps.Misses}, {"timeout", ps.Timeouts}, {"wait", ps.WaitCount}, {"stale", ps.StaleConns}} {
			ch <- prometheus.MustNewConstMetric(descRedisEvents, counter, float64(e.n), e.name)
		}
	}
}

// collectLookups reports the key store's lookups and its refusals without
// one (authz.Keyring has them; test doubles need not).
func (c *stateCollector) collectLookups(ch chan<- prometheus.Metric) {
	k, ok := c.s.keys.(lookupStater)
	if !ok {
		return
	}
	st := k.LookupStats()
	for _, l := range []struct {
		key string
		r   authz.LookupResults
	}{{"known", st.Known}, {"unknown", st.Unknown}} {
		ch <- prometheus.MustNewConstMetric(descKeyLookups, prometheus.CounterValue, float64(l.r.Found), l.key, "found")
		ch <- prometheus.MustNewConstMetric(descKeyLookups, prometheus.CounterValue, float64(l.r.Invalid), l.key, "invalid")
		ch <- prometheus.MustNewConstMetric(descKeyLookups, prometheus.CounterValue, float64(l.r.Failed), l.key, "failed")
	}
	for _, reason := range authz.RefusalReasons() {
		ch <- prometheus.MustNewConstMetric(descKeyRefused, prometheus.CounterValue, float64(st.Refused[reason]), reason)
	}
	ch <- prometheus.MustNewConstMetric(descKeyLegacy, prometheus.CounterValue, float64(st.LegacyVerified))
}

// collectLimiter reports the rate limiter's fallback state and its lease
// statistics (tenants.Limiter has both; test doubles need not).
func (c *stateCollector) collectLimiter(ch chan<- prometheus.Metric) {
	if f, ok := c.s.limiter.(fallbacker); ok {
		v := 0.0
		if f.Fallback() {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(descFallback, prometheus.GaugeValue, v)
	}
	if l, ok := c.s.limiter.(limiterStater); ok {
		st := l.Stats()
		ch <- prometheus.MustNewConstMetric(descLimiterCalls, prometheus.CounterValue, float64(st.RedisCalls))
		for _, e := range []struct {
			name string
			n    uint64
		}{{"leased", st.TokensLeased}, {"returned", st.TokensReturned}, {"dropped", st.TokensDropped}} {
			ch <- prometheus.MustNewConstMetric(descLimiterTokens, prometheus.CounterValue, float64(e.n), e.name)
		}
	}
}
