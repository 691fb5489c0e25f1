package gateway

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/invoicing-ao/gateway/invoicing"
	"github.com/invoicing-ao/gateway/tenants"
)

// metrics are the rate limit's decisions as admission met them, registered
// on the registry Config.Metrics names, not the process-wide default:
// several servers (tests) can live in one process. What the dependencies
// know of themselves (breakers, pools, the key cache, the limiter's leases)
// is theirs to report: each adapter has its collector, which the binary
// registers. No metric has a company label: companies are unbounded;
// per-company counts are usage's.
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

func newMetrics(reg prometheus.Registerer) *metrics {
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
		reg.MustRegister(m.ratelimit)
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
