package tenants

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
)

var fallbackLine = regexp.MustCompile(`(?m)^gateway_ratelimit_fallback_active(\{[^}]*\})? (\S+)$`)

// fallbackMetric is the value reg reports in Prometheus's exposition
// format, as /metrics serves it, or "absent".
func fallbackMetric(t *testing.T, reg *prometheus.Registry) string {
	t.Helper()
	rec := httptest.NewRecorder()
	promhttp.HandlerFor(reg, promhttp.HandlerOpts{}).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("/metrics: %d", rec.Code)
	}
	m := fallbackLine.FindAllStringSubmatch(rec.Body.String(), -1)
	switch {
	case len(m) == 0:
		return "absent"
	case len(m) > 1 || m[0][1] != "":
		t.Fatalf("gateway_ratelimit_fallback_active must be one series without labels: %q", m)
	}
	return m[0][2]
}

// The limiter's collector reports its fallback as one series without
// labels: 0 while Redis answers, 1 once it decides alone, 0 again once its
// probe finds Redis back.
func TestFallbackMetric(t *testing.T) {
	ctx := context.Background()
	rdb, mr := testenv.Miniredis(t)
	clk := newClock()
	l := New(Config{Redis: rdb, Now: clk.Now, RetryEvery: time.Second, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	reg := prometheus.NewRegistry()
	reg.MustRegister(l.Collector())
	if got := fallbackMetric(t, reg); got != "0" {
		t.Fatalf("Redis up: %s, want 0", got)
	}
	mr.Close()
	if d, err := l.Allow(ctx, "acme", invoicing.Live); err != nil || !d.Local {
		t.Fatalf("Allow with Redis down: %+v, %v; want a local decision", d, err)
	}
	if got := fallbackMetric(t, reg); got != "1" {
		t.Fatalf("Redis down: %s, want 1", got)
	}
	if err := mr.Restart(); err != nil {
		t.Fatal(err)
	}
	clk.Add(time.Second)
	if d := firstDecision(t, l, "acme", invoicing.Live); d.Local {
		t.Fatalf("after Redis returned and RetryEvery passed: %+v", d)
	}
	if got := fallbackMetric(t, reg); got != "0" {
		t.Fatalf("back on Redis: %s, want 0", got)
	}
}
