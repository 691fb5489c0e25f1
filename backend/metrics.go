package backend

import "github.com/prometheus/client_golang/prometheus"

// Collector reports the store's circuit breaker and connection pool, named
// database ("live", "test") in a label: the binary registers one per
// database on the registry its admin listener serves on /metrics. They are
// read at scrape time and cost nothing between scrapes.
func (s *Store) Collector(database string) prometheus.Collector {
	desc := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, prometheus.Labels{"database": database})
	}
	return &storeCollector{s: s,
		breaker: desc("gateway_database_breaker_state",
			"1 for the current state of each database's circuit breaker (closed, half-open, open).", "state"),
		conns: desc("gateway_database_pool_connections",
			"Connections of each database pool, by state (idle, in_use).", "state"),
		max: desc("gateway_database_pool_max_connections",
			"The bound of each database pool."),
		acquires: desc("gateway_database_pool_acquires_total",
			"Connections handed out by each database pool (PostgreSQL only)."),
		waits: desc("gateway_database_pool_waits_total",
			"Acquisitions that waited for a connection, by database."),
		wait: desc("gateway_database_pool_wait_seconds_total",
			"Time spent waiting for a connection, by database."),
	}
}

type storeCollector struct {
	s                                          *Store
	breaker, conns, max, acquires, waits, wait *prometheus.Desc
}

func (c *storeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.breaker, c.conns, c.max, c.acquires, c.waits, c.wait} {
		ch <- d
	}
}

func (c *storeCollector) Collect(ch chan<- prometheus.Metric) {
	gauge, counter := prometheus.GaugeValue, prometheus.CounterValue
	cur := c.s.BreakerState()
	for _, state := range []string{"closed", "half-open", "open"} {
		v := 0.0
		if state == cur {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(c.breaker, gauge, v, state)
	}
	ps := c.s.PoolStats()
	ch <- prometheus.MustNewConstMetric(c.conns, gauge, float64(ps.IdleConns), "idle")
	ch <- prometheus.MustNewConstMetric(c.conns, gauge, float64(ps.InUseConns), "in_use")
	ch <- prometheus.MustNewConstMetric(c.max, gauge, float64(ps.MaxConns))
	ch <- prometheus.MustNewConstMetric(c.acquires, counter, float64(ps.Acquires))
	ch <- prometheus.MustNewConstMetric(c.waits, counter, float64(ps.Waits))
	ch <- prometheus.MustNewConstMetric(c.wait, counter, ps.WaitTime.Seconds())
}
