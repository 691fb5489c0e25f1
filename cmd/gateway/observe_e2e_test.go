package main

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/invoicing-ao/gateway/admin"
	"github.com/invoicing-ao/gateway/backend/gendata"
	"github.com/invoicing-ao/gateway/invoicing"
)

const (
	clientTraceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	clientSpanID  = "00f067aa0ba902b7"
)

// TestObservability runs the binary's wiring against real PostgreSQL and
// Redis, with tracing configured by OTEL_* variables to a real OTLP/HTTP
// receiver, and checks the spans, the access log, /metrics and the usage
// counts of one series of requests: created, listed (under the caller's
// traceparent), refused for a bad key, rate limited, and not routed.
// Not parallel: startObserved sets the process's OTEL_* variables.
func TestObservability(t *testing.T) {
	rc := newOTLPReceiver(t)
	g := startObserved(t, map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT":    rc.URL,
		"OTEL_EXPORTER_OTLP_COMPRESSION": "gzip",
		"OTEL_SERVICE_NAME":              "gw-observed",
		"GATEWAY_TEST_RATE":              "0.001",
		"GATEWAY_TEST_BURST":             "1",
		"GATEWAY_ADMIN_TOKEN":            testAdminToken,
	})
	co := gendata.DemoCompanyA
	live, test := g.key(t, co, invoicing.Live), g.key(t, co, invoicing.Test)
	bad := "igw_live_" + strings.Repeat("Z", 43)
	// Personal data that must reach no span and no metric.
	name, nif, email, phone := "Maria Observada", "5417009999", "maria.observada@example.ao", "+244 923 111 222"
	api := g.pub.URL + "/api/v1/v1/clients"

	body := `{"name":"` + name + `","nif":"` + nif + `","email":"` + email + `","phone":"` + phone + `"}`
	if st, _, b := call(t, http.MethodPost, api, live, co, body, nil); st != http.StatusCreated {
		t.Fatalf("create: %d %s", st, b)
	}
	st, tracedID, b := call(t, http.MethodGet, api+"?search=Observada", live, co, "", map[string]string{
		"traceparent": "00-" + clientTraceID + "-" + clientSpanID + "-01"})
	if st != http.StatusOK || !strings.Contains(string(b), nif) {
		t.Fatalf("search: %d %s", st, b)
	}
	st, badID, _ := call(t, http.MethodGet, api, bad, co, "", nil)
	if st != http.StatusUnauthorized {
		t.Fatalf("bad key: %d", st)
	}
	if st, _, _ := call(t, http.MethodGet, api, test, co, "", nil); st != http.StatusOK {
		t.Fatalf("test key: %d", st)
	}
	if st, _, _ := call(t, http.MethodGet, api, test, co, "", nil); st != http.StatusTooManyRequests {
		t.Fatalf("test key over its burst: %d", st)
	}
	if st, _, _ := call(t, http.MethodGet, g.pub.URL+"/api/v1/v1/nothing-here", live, co, "", nil); st != http.StatusNotFound {
		t.Fatalf("unknown route: %d", st)
	}
	if err := g.tel.sdk.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}

	t.Run("spans", func(t *testing.T) { checkSpans(t, rc, live, test, bad, name, nif, email, phone) })
	t.Run("log", func(t *testing.T) { checkLog(t, g, rc, tracedID, badID) })
	t.Run("metrics", func(t *testing.T) { checkMetrics(t, g, co) })
	t.Run("usage", func(t *testing.T) { checkUsage(t, g, co) })
}

func checkLog(t *testing.T, g *observedGateway, rc *otlpReceiver, tracedID, badID string) {
	spanOf := map[string]span{}
	for _, s := range rc.spans() {
		if s.Kind == tracepb.Span_SPAN_KIND_SERVER {
			spanOf[s.Attrs["gateway.request_id"]] = s
		}
	}
	seen := 0
	for _, l := range jsonLines(g.logs) {
		id, _ := l["requestId"].(string)
		if id != tracedID && id != badID {
			continue
		}
		seen++
		s := spanOf[id]
		if l["traceId"] != s.TraceID || l["spanId"] != s.SpanID || s.TraceID == "" {
			t.Errorf("log line %v, span trace %s span %s", l, s.TraceID, s.SpanID)
		}
		if id == tracedID && l["traceId"] != clientTraceID {
			t.Errorf("log line of the traced request: traceId %v", l["traceId"])
		}
	}
	if seen != 2 {
		t.Errorf("%d access lines found for the two requests", seen)
	}
}

func scrape(t *testing.T, adminURL string) map[string]*dto.MetricFamily {
	t.Helper()
	res, err := http.Get(adminURL + "/metrics") // no token: scrapers need none
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: %d", res.StatusCode)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return mfs
}

// value returns the value of the family's series with exactly these labels
// (a counter, gauge, or a histogram's count), and whether it exists.
func value(mfs map[string]*dto.MetricFamily, name string, labels map[string]string) (float64, bool) {
	mf := mfs[name]
	if mf == nil {
		return 0, false
	}
next:
	for _, m := range mf.Metric {
		if len(m.Label) != len(labels) {
			continue
		}
		for _, l := range m.Label {
			if labels[l.GetName()] != l.GetValue() {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		}
	}
	return 0, false
}

func checkMetrics(t *testing.T, g *observedGateway, co string) {
	mfs := scrape(t, g.admin.URL)
	const list = "GET /api/v1/v1/clients"
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"gateway_database_breaker_state", map[string]string{"database": "live", "state": "closed"}, 1},
		{"gateway_database_breaker_state", map[string]string{"database": "test", "state": "open"}, 0},
		{"gateway_http_requests_total", map[string]string{"route": "POST /api/v1/v1/clients", "status": "201"}, 1},
		{"gateway_http_requests_total", map[string]string{"route": list, "status": "200"}, 2},
		{"gateway_http_requests_total", map[string]string{"route": list, "status": "401"}, 1},
		{"gateway_http_requests_total", map[string]string{"route": list, "status": "429"}, 1},
		{"gateway_http_requests_total", map[string]string{"route": "unmatched", "status": "404"}, 1},
		{"gateway_http_request_duration_seconds", map[string]string{"route": list}, 4},
		{"gateway_ratelimit_decisions_total", map[string]string{"mode": "LIVE", "decision": "allowed", "source": "redis"}, 2},
		{"gateway_ratelimit_decisions_total", map[string]string{"mode": "TEST", "decision": "allowed", "source": "redis"}, 1},
		{"gateway_ratelimit_decisions_total", map[string]string{"mode": "TEST", "decision": "rejected", "source": "redis"}, 1},
		{"gateway_database_pool_max_connections", map[string]string{"database": "live"}, float64(g.cfg.DatabaseMaxConns)},
		{"gateway_key_cache_lookups_total", map[string]string{"result": "negative"}, 0},
		// LIVE's default limit (50/s, burst 100) is leased: the second
		// refresh took two tokens, one for its request and one spare.
		{"gateway_ratelimit_lease_tokens_total", map[string]string{"event": "leased"}, 1},
		{"gateway_ratelimit_redis_calls_total", map[string]string{}, 4},
	} {
		if got, ok := value(mfs, c.name, c.labels); !ok || got != c.want {
			t.Errorf("%s%v = %v (present %v), want %v", c.name, c.labels, got, ok, c.want)
		}
	}
	// Five requests carried a key; each verification is one cache outcome,
	// and the first use of each of the three keys asked Redis.
	hit, _ := value(mfs, "gateway_key_cache_lookups_total", map[string]string{"result": "hit"})
	miss, _ := value(mfs, "gateway_key_cache_lookups_total", map[string]string{"result": "miss"})
	if hit+miss != 5 || miss < 3 {
		t.Errorf("key cache: %v hits, %v misses; want 5 lookups, at least 3 misses", hit, miss)
	}
	if n, ok := value(mfs, "gateway_redis_pool_connections", map[string]string{"state": "total"}); !ok || n < 1 {
		t.Errorf("Redis pool total connections %v %v", n, ok)
	}
	if n, ok := value(mfs, "gateway_database_pool_acquires_total", map[string]string{"database": "live"}); !ok || n < 3 {
		t.Errorf("live pool acquires %v %v", n, ok)
	}
	if _, ok := mfs["go_goroutines"]; !ok {
		t.Error("no Go runtime metrics")
	}
	for name, mf := range mfs {
		for _, m := range mf.Metric {
			for _, l := range m.Label {
				if strings.Contains(strings.ToLower(l.GetName()), "company") || l.GetValue() == co {
					t.Errorf("%s has a company label %s=%s", name, l.GetName(), l.GetValue())
				}
			}
		}
	}
}

func checkUsage(t *testing.T, g *observedGateway, co string) {
	if err := g.d.usage.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	sum := func(v admin.UsageView) (live2, test2, test4, total int64) {
		for _, d := range v.Days {
			live2 += d.Live["2xx"]
			test2 += d.Test["2xx"]
			test4 += d.Test["4xx"]
			total += d.Total
		}
		return
	}
	// Two days: the requests may straddle midnight in Luanda.
	url := g.admin.URL + "/admin/v1/companies/" + co + "/usage?days=2"
	st, _, b := call(t, http.MethodGet, url, g.token, "", "", nil)
	var v admin.UsageView
	if st != http.StatusOK || json.Unmarshal(b, &v) != nil || len(v.Days) != 2 {
		t.Fatalf("admin usage: %d %s", st, b)
	}
	// The bad key's 401 and the unrouted 404 know no company: not counted.
	if l2, t2, t4, total := sum(v); l2 != 2 || t2 != 1 || t4 != 1 || total != 4 {
		t.Errorf("admin usage: live 2xx %d, test 2xx %d, test 4xx %d, total %d; want 2, 1, 1, 4\n%s", l2, t2, t4, total, b)
	}
	for _, c := range []struct {
		url, token string
		want       int
	}{
		{url, "", http.StatusUnauthorized},
		{g.admin.URL + "/admin/v1/companies/" + co + "/usage?days=0", g.token, http.StatusBadRequest},
		{g.admin.URL + "/admin/v1/companies/" + co + "/usage?days=x", g.token, http.StatusBadRequest},
		{g.admin.URL + "/admin/v1/companies/00000000-0000-4000-8000-0000000000ff/usage", g.token, http.StatusUnprocessableEntity},
	} {
		if st, _, b := call(t, http.MethodGet, c.url, c.token, "", "", nil); st != c.want {
			t.Errorf("%s: %d %s, want %d", c.url, st, b, c.want)
		}
	}

	code, out, errs := gw(t, g.env, "usage", "--company", co, "--days", "2", "--json")
	var cv admin.UsageView
	if code != 0 || json.Unmarshal([]byte(out), &cv) != nil {
		t.Fatalf("usage --json: %d %s %s", code, out, errs)
	}
	if l2, t2, t4, total := sum(cv); l2 != 2 || t2 != 1 || t4 != 1 || total != 4 {
		t.Errorf("CLI usage: %s", out)
	}
	code, out, _ = gw(t, g.env, "usage", "--company", co)
	if code != 0 || !strings.Contains(out, "company "+co) || !strings.Contains(out, "LIVE 2xx=") || strings.Count(out, "\n") != 1+admin.DefaultUsageDays {
		t.Errorf("usage text: %d\n%s", code, out)
	}
	if code, _, _ := gw(t, g.env, "usage"); code != 2 {
		t.Errorf("usage without --company: exit %d", code)
	}
}
