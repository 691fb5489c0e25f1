package authz

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/invoicing-ao/gateway/internal/testenv"
)

// The keyring's collector reports what its verifications did: a malformed
// key is refused without a lookup, counted under its reason, and every
// series is there from the start.
func TestCollectorReportsVerifications(t *testing.T) {
	t.Parallel()
	rdb, _ := testenv.Miniredis(t)
	k := New(Config{Redis: rdb})
	t.Cleanup(func() { _ = k.Close() })
	reg := prometheus.NewRegistry()
	reg.MustRegister(k.Collector())
	if _, err := k.Verify(context.Background(), "not a key"); err == nil {
		t.Fatal("a malformed key verified")
	}
	rec := httptest.NewRecorder()
	promhttp.HandlerFor(reg, promhttp.HandlerOpts{}).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	body := rec.Body.String()
	for _, line := range []string{
		`gateway_key_refused_total{reason="malformed"} 1`,
		`gateway_key_refused_total{reason="instance_limit"} 0`,
		`gateway_key_cache_lookups_total{result="hit"} 0`,
		`gateway_key_cache_renewals_total{result="renewed"} 0`,
		`gateway_key_lookups_total{key="unknown",result="found"} 0`,
		`gateway_key_legacy_form_verified_total 0`,
	} {
		if !strings.Contains(body, "\n"+line+"\n") {
			t.Errorf("no %q in:\n%s", line, body)
		}
	}
}
