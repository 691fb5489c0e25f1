package tenants

import "github.com/prometheus/client_golang/prometheus"

// Collector reports whether the limiter decides alone (Redis unreachable)
// and what its leases cost Redis: the binary registers it on the registry
// its admin listener serves on /metrics. The counts are read at scrape
// time and cost nothing between scrapes.
func (l *Limiter) Collector() prometheus.Collector { return limiterCollector{l} }

type limiterCollector struct{ l *Limiter }

var (
	descFallback = prometheus.NewDesc("gateway_ratelimit_fallback_active",
		"1 while this instance decides rate limits locally because Redis is unreachable, else 0.", nil, nil)
	descRedisCalls = prometheus.NewDesc("gateway_ratelimit_redis_calls_total",
		"Rate-limit script calls sent to Redis (each exchanges the tokens of one or more companies).", nil, nil)
	descLeaseTokens = prometheus.NewDesc("gateway_ratelimit_lease_tokens_total",
		"Leased rate-limit tokens by event: leased (taken beyond the requests waiting), returned (unspent, given back), dropped (unspent, never given back).", []string{"event"}, nil)
)

func (limiterCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descFallback
	ch <- descRedisCalls
	ch <- descLeaseTokens
}

func (c limiterCollector) Collect(ch chan<- prometheus.Metric) {
	v := 0.0
	if c.l.Fallback() {
		v = 1
	}
	ch <- prometheus.MustNewConstMetric(descFallback, prometheus.GaugeValue, v)
	st := c.l.Stats()
	ch <- prometheus.MustNewConstMetric(descRedisCalls, prometheus.CounterValue, float64(st.RedisCalls))
	for _, e := range []struct {
		name string
		n    uint64
	}{{"leased", st.TokensLeased}, {"returned", st.TokensReturned}, {"dropped", st.TokensDropped}} {
		ch <- prometheus.MustNewConstMetric(descLeaseTokens, prometheus.CounterValue, float64(e.n), e.name)
	}
}
