package backend_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/invoicing-ao/gateway/backend"
)

// Two stores report their breaker and pool under the same names, told
// apart by their database label, as the binary registers them.
func TestCollectorNamesItsDatabase(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	for _, name := range []string{"live", "test"} {
		s, err := backend.Open(context.Background(), backend.Config{URL: sqliteDB(t)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		reg.MustRegister(s.Collector(name))
	}
	rec := httptest.NewRecorder()
	promhttp.HandlerFor(reg, promhttp.HandlerOpts{}).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	body := rec.Body.String()
	for _, db := range []string{"live", "test"} {
		for _, line := range []string{
			`gateway_database_breaker_state{database="` + db + `",state="closed"} 1`,
			`gateway_database_breaker_state{database="` + db + `",state="open"} 0`,
			`gateway_database_pool_connections{database="` + db + `",state="in_use"} 0`,
			`gateway_database_pool_max_connections{database="` + db + `"} `,
			`gateway_database_pool_acquires_total{database="` + db + `"} `,
			`gateway_database_pool_waits_total{database="` + db + `"} `,
			`gateway_database_pool_wait_seconds_total{database="` + db + `"} `,
		} {
			if !strings.Contains(body, "\n"+line) {
				t.Errorf("no %q in:\n%s", line, body)
			}
		}
	}
}
