package gateway

import (
	"context"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/invoicing-ao/gateway/backend/gendata"
	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
	"github.com/invoicing-ao/gateway/tenants"
)

// fallbackLimiter is a limiter whose fallback state the test sets.
type fallbackLimiter struct {
	Limiter
	on atomic.Bool
}

func (l *fallbackLimiter) Fallback() bool { return l.on.Load() }

// plainLimiter hides every optional method of the limiter it wraps.
type plainLimiter struct{ Limiter }

var fallbackLine = regexp.MustCompile(`(?m)^gateway_ratelimit_fallback_active(\{[^}]*\})? (\S+)$`)

// fallbackMetric is the value the registry the server's metrics are
// registered on (Config.Metrics) reports, or "absent".
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

func TestFallbackMetric(t *testing.T) {
	t.Run("follows the limiter", func(t *testing.T) {
		var fl *fallbackLimiter
		reg := prometheus.NewRegistry()
		newLocalGateway(t, func(c *Config) { fl = &fallbackLimiter{Limiter: c.Limiter}; c.Limiter, c.Metrics = fl, reg })
		if got := fallbackMetric(t, reg); got != "0" {
			t.Fatalf("Redis reachable: %s, want 0", got)
		}
		fl.on.Store(true)
		if got := fallbackMetric(t, reg); got != "1" {
			t.Fatalf("in fallback: %s, want 1", got)
		}
		fl.on.Store(false)
		if got := fallbackMetric(t, reg); got != "0" {
			t.Fatalf("back on Redis: %s, want 0", got)
		}
	})
	t.Run("absent without the ability", func(t *testing.T) {
		reg := prometheus.NewRegistry()
		newLocalGateway(t, func(c *Config) { c.Limiter, c.Metrics = plainLimiter{c.Limiter}, reg })
		if got := fallbackMetric(t, reg); got != "absent" {
			t.Fatalf("a limiter without Fallback: %s, want no series", got)
		}
	})
	// The real limiter has the ability under the name the collector asks
	// for, and turns it on when its Redis stops answering.
	t.Run("tenants.Limiter", func(t *testing.T) {
		rdb, mr := testenv.Miniredis(t)
		lim := tenants.New(tenants.Config{Redis: rdb})
		reg := prometheus.NewRegistry()
		newLocalGateway(t, func(c *Config) { c.Limiter, c.Metrics = lim, reg })
		if got := fallbackMetric(t, reg); got != "0" {
			t.Fatalf("Redis up: %s, want 0", got)
		}
		mr.Close()
		if d, err := lim.Allow(context.Background(), gendata.DemoCompanyA, invoicing.Live); err != nil || !d.Local {
			t.Fatalf("Allow with Redis down: %+v, %v; want a local decision", d, err)
		}
		if got := fallbackMetric(t, reg); got != "1" {
			t.Fatalf("Redis down: %s, want 1", got)
		}
	})
}
