package web

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics are a listener's requests, by route and status, and their
// latencies (Telemetry.Metrics). No series has a company label: companies
// are unbounded; per-company counts are usage's.
type Metrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	// The series each request touches, found once: a vector's lookup by
	// label values hashes them and takes the vector's lock on every call.
	// Routes and statuses are few (the route table's names), so is this.
	series sync.Map // routeStatus → *routeSeries
}

type routeStatus struct {
	route  string
	status int
}

type routeSeries struct {
	requests prometheus.Counter
	duration prometheus.Observer
}

// NewMetrics makes the series and registers them on reg (the registry
// the admin listener serves on /metrics); nil registers them nowhere.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_http_requests_total",
			Help: "API requests answered, by route pattern and status.",
		}, []string{"route", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "gateway_http_request_duration_seconds",
			Help:    "Time from the first byte of the request to the end of the answer, by route pattern.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}, []string{"route"}),
	}
	if reg != nil {
		reg.MustRegister(m.requests, m.duration)
	}
	return m
}

func (m *Metrics) observe(route string, status int, elapsed time.Duration) {
	k := routeStatus{route, status}
	v, ok := m.series.Load(k)
	if !ok {
		v, _ = m.series.LoadOrStore(k, &routeSeries{
			requests: m.requests.WithLabelValues(route, strconv.Itoa(status)),
			duration: m.duration.WithLabelValues(route),
		})
	}
	se := v.(*routeSeries)
	se.requests.Inc()
	se.duration.Observe(elapsed.Seconds())
}

// MetricsRoute answers with reg's metrics in Prometheus's exposition format
// (the admin listener's /metrics), and counts its own failures there
// (promhttp_metric_handler_errors_total).
func MetricsRoute(reg *prometheus.Registry) RouteFunc {
	h := promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg})
	return func(*http.Request, Params) (Answer, error) { return Answer{Serve: h}, nil }
}
