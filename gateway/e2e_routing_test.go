package gateway_test

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
)

// Routes, statuses, rate limits and a database gone, as the API answers them.

func TestRoutingStatuses(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	in := w.start()
	k := in.key(t, coA, invoicing.Live, allScopes)
	expectProblem(t, do(t, in.pub.URL, req{Path: "/api/v1/v1/nothing", Key: k.Key, Company: coA}), 404, "route_not_found")
	expectProblem(t, do(t, in.pub.URL, req{Path: "/api/v1/v1/clients/not-a-uuid", Key: k.Key, Company: coA}), 404, "not_found")
	expectProblem(t, do(t, in.pub.URL, req{Path: "/api/v1/v1/invoices/00000000-0000-4000-8000-000000000000", Key: k.Key, Company: coA}), 404, "not_found")
	// An escaped slash stays in its segment: an unknown id, answered as the
	// operation answers one (with its RateLimit headers), not an unknown route.
	for _, path := range []string{"/api/v1/v1/invoices/a%2Fb", "/api/v1/v1/clients/a%2fb%2F", "/api/v1/v1/clients/%2F",
		"/api/v1/v1/invoices/..%2F..%2Fclients", "/api/v1/v1/invoices/%252F"} {
		r := do(t, in.pub.URL, req{Path: path, Key: k.Key, Company: coA})
		expectProblem(t, r, 404, "not_found")
		if r.Header.Get("RateLimit") == "" {
			t.Errorf("%s: no RateLimit header", path)
		}
	}
	expectProblem(t, do(t, in.pub.URL, req{Path: "/api/v1/v1/invoices%2Fx", Key: k.Key, Company: coA}), 404, "route_not_found")
	expectProblem(t, do(t, in.pub.URL, req{Path: "/api/v1%2Fv1/invoices", Key: k.Key, Company: coA}), 404, "route_not_found")
	r := do(t, in.pub.URL, req{Method: "DELETE", Path: "/api/v1/v1/clients", Key: k.Key, Company: coA})
	expectProblem(t, r, 405, "method_not_allowed")
	if allow := r.Header.Get("Allow"); !strings.Contains(allow, "GET") || !strings.Contains(allow, "POST") {
		t.Errorf("Allow %q", allow)
	}
	r = do(t, in.pub.URL, req{Method: "PUT", Path: "/api/v1/v1/invoices/x", Key: k.Key, Company: coA})
	expectProblem(t, r, 405, "method_not_allowed")
	// The caller's sane request id is echoed; a hostile one is replaced.
	r = do(t, in.pub.URL, req{Path: "/healthz", Header: map[string]string{"X-Request-Id": "abc-123"}})
	if r.Status != 200 || r.Header.Get("X-Request-Id") != "abc-123" {
		t.Fatalf("healthz: %d, request id %q", r.Status, r.Header.Get("X-Request-Id"))
	}
	r = do(t, in.pub.URL, req{Path: "/healthz", Header: map[string]string{"X-Request-Id": "a b\"<script>"}})
	if id := r.Header.Get("X-Request-Id"); id == "" || strings.ContainsAny(id, " \"<") {
		t.Fatalf("hostile request id echoed: %q", id)
	}
	if r := do(t, in.pub.URL, req{Path: "/readyz"}); r.Status != 200 {
		t.Fatalf("readyz: %d %s", r.Status, r.Body)
	}
	// Authenticated answers are private and not sniffable.
	r = do(t, in.pub.URL, req{Path: "/api/v1/v1/clients", Key: k.Key, Company: coA})
	if r.Header.Get("Cache-Control") != "no-store" || r.Header.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("headers: %v", r.Header)
	}
}

func TestRateLimit(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	in := w.start()
	k := in.key(t, coA, invoicing.Live, allScopes)
	kt := in.key(t, coA, invoicing.Test, allScopes)
	if _, err := in.adm.Limits.SetCompanyLimit(t.Context(), testActor, coA, "LIVE", 0.5, 2); err != nil {
		t.Fatal(err)
	}
	q := req{Path: "/api/v1/v1/clients?pageSize=1", Key: k.Key, Company: coA}
	for i := 0; i < 2; i++ {
		r := do(t, in.pub.URL, q)
		if r.Status != 200 {
			t.Fatalf("request %d: %d %s", i, r.Status, r.Body)
		}
		if r.Header.Get("RateLimit-Policy") != `"live";q=2;w=4` || !strings.HasPrefix(r.Header.Get("RateLimit"), `"live";r=`) {
			t.Fatalf("headers: %q %q", r.Header.Get("RateLimit-Policy"), r.Header.Get("RateLimit"))
		}
	}
	r := do(t, in.pub.URL, q)
	expectProblem(t, r, 429, "rate_limit_live")
	if r.Header.Get("Retry-After") == "" || !strings.Contains(r.Header.Get("RateLimit"), "r=0") {
		t.Fatalf("429 headers: %v", r.Header)
	}
	// TEST traffic has its own budget.
	if r := do(t, in.pub.URL, req{Path: q.Path, Key: kt.Key, Company: coA}); r.Status != 200 {
		t.Fatalf("TEST after LIVE exhausted: %d %s", r.Status, r.Body)
	}
	if _, err := in.adm.Limits.ResetCompanyLimits(t.Context(), testActor, coA); err != nil {
		t.Fatal(err)
	}
}

// A database that goes away answers 503 with Retry-After, not 500.
func TestDatabaseUnavailable(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	in := w.start()
	k := in.key(t, coA, invoicing.Test, allScopes)
	dropDatabase(t, w.test)
	r := do(t, in.pub.URL, req{Path: "/api/v1/v1/clients", Key: k.Key, Company: coA})
	expectProblem(t, r, 503, "database_unavailable")
	if r.Header.Get("Retry-After") == "" {
		t.Error("no Retry-After")
	}
	// Readiness stays 200 (the live database still serves LIVE keys) and
	// says what is down.
	r = do(t, in.pub.URL, req{Path: "/readyz"})
	var ready struct {
		Status string
		Checks map[string]string
	}
	if err := json.Unmarshal(r.Body, &ready); err != nil || r.Status != 200 || ready.Status != "degraded" ||
		ready.Checks["testDatabase"] != "unavailable" || ready.Checks["liveDatabase"] != "ok" || ready.Checks["redis"] != "ok" {
		t.Fatalf("readyz with the sandbox database down: %d %s", r.Status, r.Body)
	}
	kl := in.key(t, coA, invoicing.Live, allScopes)
	if r := do(t, in.pub.URL, req{Path: "/api/v1/v1/clients", Key: kl.Key, Company: coA}); r.Status != 200 {
		t.Fatalf("LIVE with the sandbox down: %d %s", r.Status, r.Body)
	}
}

// dropDatabase removes a test database under a running gateway, as a real
// outage would: its connections are terminated and new ones are refused.
func dropDatabase(t *testing.T, dbURL string) {
	t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(t.Context(), testenv.PostgresAdminURL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	if _, err := conn.Exec(t.Context(), "DROP DATABASE "+strings.TrimPrefix(u.Path, "/")+" WITH (FORCE)"); err != nil {
		t.Fatal(err)
	}
}
