package main

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/redis/go-redis/v9"

	"github.com/invoicing-ao/gateway/web"
)

// adminHandler is the admin listener's handler, assembled here where every
// piece is wired: this instance's health and readiness (the public API's,
// gateway.Server.Health), its metrics, and the admin API, console and
// runtime profiles (admin.Service.Routes), in web's chain with the host
// check (adminHosts) and without the public listener's telemetry and CORS.
// It is never mounted on the public listener.
func (d *deps) adminHandler() http.Handler {
	return web.Listener(web.Config{Logger: d.logger, HostCheck: true, Hosts: d.adminHosts},
		d.server.Health,
		func(rt *web.Router) {
			// No token for /metrics: scrapers need no power over keys, and
			// the metrics hold no secret and no company data.
			rt.Handle(http.MethodGet, "/metrics", web.MetricsRoute(d.metrics))
		},
		d.admin.Routes)
}

// newRegistry is the registry the admin listener serves on /metrics: the
// runtime's and the process's metrics, and those each component registers
// as connectWith wires it. A registry of its own, not the process-wide
// default: tests run several gateways in one process.
func newRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// redisPoolCollector reports the connection pool of the Redis client every
// component shares, read at scrape time.
type redisPoolCollector struct{ rdb redis.UniversalClient }

var (
	descRedisConns = prometheus.NewDesc("gateway_redis_pool_connections",
		"Connections of the Redis pool, by state (idle, total).", []string{"state"}, nil)
	descRedisEvents = prometheus.NewDesc("gateway_redis_pool_events_total",
		"Redis pool events: hits (idle connection reused), misses (new connection), timeouts (no connection in time), waits, stale (closed as stale).", []string{"event"}, nil)
)

func (redisPoolCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descRedisConns
	ch <- descRedisEvents
}

func (c redisPoolCollector) Collect(ch chan<- prometheus.Metric) {
	ps := c.rdb.PoolStats()
	ch <- prometheus.MustNewConstMetric(descRedisConns, prometheus.GaugeValue, float64(ps.IdleConns), "idle")
	ch <- prometheus.MustNewConstMetric(descRedisConns, prometheus.GaugeValue, float64(ps.TotalConns), "total")
	for _, e := range []struct {
		name string
		n    uint32
	}{{"hit", ps.Hits}, {"miss", ps.Misses}, {"timeout", ps.Timeouts}, {"wait", ps.WaitCount}, {"stale", ps.StaleConns}} {
		ch <- prometheus.MustNewConstMetric(descRedisEvents, prometheus.CounterValue, float64(e.n), e.name)
	}
}
