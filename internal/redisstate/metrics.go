package redisstate

import (
	"github.com/prometheus/client_golang/prometheus"
)

// The metrics of the last reading (docs/observability.md), read at scrape
// time: no scrape asks Redis.
var (
	stateDesc = prometheus.NewDesc("gateway_redis_durability",
		"What Redis allows that the control plane's state depends on, by check (persistence, eviction, replicas): 1 for the state it is in (ok, at_risk, unknown), 0 for the others.",
		[]string{"check", "state"}, nil)
	replicasDesc = prometheus.NewDesc("gateway_redis_replicas",
		"Replicas online, on the Redis master that has the fewest; absent while unknown.", nil, nil)
	maxMemoryDesc = prometheus.NewDesc("gateway_redis_maxmemory_bytes",
		"Redis's maxmemory, the smallest a master has (0: no limit); absent while unknown.", nil, nil)
	waitDesc = prometheus.NewDesc("gateway_redis_changes_wait_replicas",
		"How many Redis replicas each change of keys, limits, webhook endpoints and the audit log waits for before it is reported done.", nil, nil)
	checkedDesc = prometheus.NewDesc("gateway_redis_durability_checked_timestamp_seconds",
		"When Redis was last read for these checks (Unix time); absent before the first reading.", nil, nil)
)

type collector struct{ w *Watcher }

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{stateDesc, replicasDesc, maxMemoryDesc, waitDesc, checkedDesc} {
		ch <- d
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	r := c.w.Last()
	for _, chk := range r.Checks() {
		for _, st := range States {
			v := 0.0
			if chk.State == st {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(stateDesc, prometheus.GaugeValue, v, chk.Name, string(st))
		}
	}
	if n, ok := r.fewestReplicas(); ok {
		ch <- prometheus.MustNewConstMetric(replicasDesc, prometheus.GaugeValue, float64(n))
	}
	if m, ok := r.smallestMaxMemory(); ok {
		ch <- prometheus.MustNewConstMetric(maxMemoryDesc, prometheus.GaugeValue, float64(m))
	}
	if c.w.cfg.WaitFor != nil {
		ch <- prometheus.MustNewConstMetric(waitDesc, prometheus.GaugeValue, float64(c.w.cfg.WaitFor()))
	}
	if !r.At.IsZero() {
		ch <- prometheus.MustNewConstMetric(checkedDesc, prometheus.GaugeValue, float64(r.At.UnixNano())/1e9)
	}
}

// fewestReplicas is the fewest replicas online on a master; ok is false
// when any master would not say.
func (r Report) fewestReplicas() (n int, ok bool) {
	for i, s := range r.Servers {
		if !s.ReplicasKnown {
			return 0, false
		}
		if i == 0 || s.Replicas < n {
			n = s.Replicas
		}
	}
	return n, len(r.Servers) > 0
}

// smallestMaxMemory is the smallest maxmemory a master has (0 when none
// has one); ok is false when any master would not say.
func (r Report) smallestMaxMemory() (m int64, ok bool) {
	for _, s := range r.Servers {
		if !s.ConfigKnown {
			return 0, false
		}
		if s.MaxMemory > 0 && (m == 0 || s.MaxMemory < m) {
			m = s.MaxMemory
		}
	}
	return m, len(r.Servers) > 0
}
