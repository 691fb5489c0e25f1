package gateway_test

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
)

type page struct {
	Data     []map[string]any `json:"data"`
	Total    int              `json:"total"`
	Page     int              `json:"page"`
	PageSize int              `json:"pageSize"`
}

func getPage(t *testing.T, base string, q req) page {
	t.Helper()
	r := do(t, base, q)
	if r.Status != 200 {
		t.Fatalf("%s: %d %s", q.Path, r.Status, r.Body)
	}
	var p page
	if err := json.Unmarshal(r.Body, &p); err != nil {
		t.Fatal(err)
	}
	return p
}

func ids(p page) map[string]bool {
	m := map[string]bool{}
	for _, d := range p.Data {
		m[d["id"].(string)] = true
	}
	return m
}

func TestListsAndGets(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	in := w.start()
	k := in.key(t, coA, invoicing.Live, allScopes)
	get := func(path string) page { return getPage(t, in.pub.URL, req{Path: path, Key: k.Key, Company: coA}) }

	inv := get("/api/v1/v1/invoices")
	if inv.Page != 1 || inv.PageSize != 20 || inv.Total == 0 || len(inv.Data) == 0 || len(inv.Data) > 20 {
		t.Fatalf("default invoice page: page=%d size=%d total=%d len=%d", inv.Page, inv.PageSize, inv.Total, len(inv.Data))
	}
	first := inv.Data[0]
	for _, f := range []string{"id", "number", "type", "status", "totalAmount", "currency", "issuedAt", "dueDate", "customer", "items"} {
		if _, ok := first[f]; !ok {
			t.Errorf("invoice lacks %s: %v", f, first)
		}
	}
	r := do(t, in.pub.URL, req{Path: "/api/v1/v1/invoices/" + first["id"].(string), Key: k.Key, Company: coA})
	if r.Status != 200 {
		t.Fatalf("get invoice: %d %s", r.Status, r.Body)
	}
	one := r.json(t)
	if one["id"] != first["id"] || one["transmission"] == nil {
		t.Fatalf("get invoice: %s", r.Body)
	}

	// Filters reach the adapter: every returned item matches.
	for _, st := range []string{"DRAFT", "ISSUED", "PAID", "CANCELLED", "OVERDUE"} {
		p := get("/api/v1/v1/invoices?pageSize=100&status=" + st)
		for _, d := range p.Data {
			if d["status"] != st {
				t.Errorf("status=%s returned %v", st, d["status"])
			}
			if st == "OVERDUE" && d["type"] != "FT" && d["type"] != "ND" {
				t.Errorf("a %v is OVERDUE: only FT and ND can be", d["type"])
			}
		}
	}
	p := get("/api/v1/v1/invoices?type=PF&pageSize=5&page=1")
	for _, d := range p.Data {
		if d["type"] != "PF" {
			t.Errorf("type=PF returned %v", d["type"])
		}
	}

	cl := get("/api/v1/v1/clients?pageSize=3")
	if cl.PageSize != 3 || len(cl.Data) == 0 || cl.Total < len(cl.Data) {
		t.Fatalf("clients: %+v", cl)
	}
	c0 := cl.Data[0]
	r = do(t, in.pub.URL, req{Path: "/api/v1/v1/clients/" + c0["id"].(string), Key: k.Key, Company: coA})
	if r.Status != 200 || r.json(t)["id"] != c0["id"] {
		t.Fatalf("get client: %d %s", r.Status, r.Body)
	}
	// A page past the end: empty data, true total.
	past := get(fmt.Sprintf("/api/v1/v1/clients?pageSize=100&page=%d", cl.Total/100+2))
	if len(past.Data) != 0 || past.Total != cl.Total || past.Data == nil {
		t.Fatalf("past the end: %+v", past)
	}
}

// LIVE keys see the live database, TEST keys the sandbox, never the other.
func TestModesAreSeparate(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	in := w.start()
	live := in.key(t, coA, invoicing.Live, allScopes)
	test := in.key(t, coA, invoicing.Test, allScopes)
	li := getPage(t, in.pub.URL, req{Path: "/api/v1/v1/invoices?pageSize=100", Key: live.Key, Company: coA})
	ti := getPage(t, in.pub.URL, req{Path: "/api/v1/v1/invoices?pageSize=100", Key: test.Key, Company: coA})
	for id := range ids(li) {
		if ids(ti)[id] {
			t.Fatalf("invoice %s seen in both modes", id)
		}
	}
	// A client created with a TEST key exists only in the sandbox.
	r := do(t, in.pub.URL, req{Method: "POST", Path: "/api/v1/v1/clients", Key: test.Key, Company: coA, Body: `{"name":"Sandbox Only"}`})
	if r.Status != 201 {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	loc := r.Header.Get("Location")
	if r := do(t, in.pub.URL, req{Path: loc, Key: test.Key, Company: coA}); r.Status != 200 {
		t.Fatalf("TEST get: %d", r.Status)
	}
	expectProblem(t, do(t, in.pub.URL, req{Path: loc, Key: live.Key, Company: coA}), 404, "not_found")
	// And a live invoice id is unknown to the TEST key.
	for id := range ids(li) {
		expectProblem(t, do(t, in.pub.URL, req{Path: "/api/v1/v1/invoices/" + id, Key: test.Key, Company: coA}), 404, "not_found")
		break
	}
}

// Another company's ids answer exactly like unknown ids.
func TestCrossCompany(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	in := w.start()
	a := in.key(t, coA, invoicing.Live, allScopes)
	b := in.key(t, coB, invoicing.Live, allScopes)
	bInv := getPage(t, in.pub.URL, req{Path: "/api/v1/v1/invoices", Key: b.Key, Company: coB})
	bCl := getPage(t, in.pub.URL, req{Path: "/api/v1/v1/clients", Key: b.Key, Company: coB})
	if len(bInv.Data) == 0 || len(bCl.Data) == 0 {
		t.Fatal("company B has no data")
	}
	for _, path := range []string{
		"/api/v1/v1/invoices/" + bInv.Data[0]["id"].(string),
		"/api/v1/v1/clients/" + bCl.Data[0]["id"].(string),
	} {
		other := do(t, in.pub.URL, req{Path: path, Key: a.Key, Company: coA})
		unknown := do(t, in.pub.URL, req{Path: path[:strings.LastIndexByte(path, '/')+1] + "00000000-0000-4000-8000-000000000001", Key: a.Key, Company: coA})
		mo, mu := other.json(t), unknown.json(t)
		delete(mo, "requestId")
		delete(mu, "requestId")
		if other.Status != 404 || fmt.Sprint(mo) != fmt.Sprint(mu) {
			t.Fatalf("other company's id answered differently from an unknown id:\n%s\n%s", other.Body, unknown.Body)
		}
	}
	// Searching A's clients never returns B's.
	bName := bCl.Data[0]["name"].(string)
	res := getPage(t, in.pub.URL, req{Path: "/api/v1/v1/clients?search=" + urlQuery(bName), Key: a.Key, Company: coA})
	for id := range ids(res) {
		if ids(bCl)[id] {
			t.Fatalf("A's search returned B's client %s", id)
		}
	}
	// A's key cannot act for B even when naming B.
	expectProblem(t, do(t, in.pub.URL, req{Method: "POST", Path: "/api/v1/v1/clients", Key: a.Key, Company: coB, Body: `{"name":"x"}`}), 403, "company_mismatch")
}

func TestCreateClient(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	in := w.start()
	k := in.key(t, coA, invoicing.Live, allScopes)
	post := func(body string) resp {
		return do(t, in.pub.URL, req{Method: "POST", Path: "/api/v1/v1/clients", Key: k.Key, Company: coA, Body: body})
	}
	r := post(`{"name":"  Kianda Comércio Lda ","nif":"54 1700 0001","email":"geral@kianda.ao","phone":"+244 923 456 789","address":"Rua 1, Luanda","type":"COMPANY"}`)
	if r.Status != 201 {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	c := r.json(t)
	want := map[string]any{"name": "Kianda Comércio Lda", "nif": "5417000001", "email": "geral@kianda.ao",
		"phone": "+244923456789", "address": "Rua 1, Luanda", "type": "COMPANY"}
	for f, v := range want {
		if c[f] != v {
			t.Errorf("%s = %v, want %v", f, c[f], v)
		}
	}
	loc := r.Header.Get("Location")
	if loc != "/api/v1/v1/clients/"+c["id"].(string) {
		t.Fatalf("Location %q", loc)
	}
	g := do(t, in.pub.URL, req{Path: loc, Key: k.Key, Company: coA})
	if g.Status != 200 || strings.TrimSpace(string(g.Body)) != strings.TrimSpace(string(r.Body)) {
		t.Fatalf("GET differs from the create answer:\n%s\n%s", g.Body, r.Body)
	}
	// Same NIF, any spelling: 409, and nothing is created.
	before := getPage(t, in.pub.URL, req{Path: "/api/v1/v1/clients", Key: k.Key, Company: coA}).Total
	expectProblem(t, post(`{"name":"Other","nif":"5417000001"}`), 409, "nif_conflict")
	expectProblem(t, post(`{"name":"Other","nif":" 541 700 0001 "}`), 409, "nif_conflict")
	// Minimal body: only a name.
	if r := post(`{"name":"Só Nome"}`); r.Status != 201 || r.json(t)["nif"] != nil {
		t.Fatalf("minimal: %d %s", r.Status, r.Body)
	}
	after := getPage(t, in.pub.URL, req{Path: "/api/v1/v1/clients", Key: k.Key, Company: coA}).Total
	if after != before+1 {
		t.Fatalf("total %d -> %d, want one more", before, after)
	}
	// The same NIF in another company is fine.
	kb := in.key(t, coB, invoicing.Live, allScopes)
	if r := do(t, in.pub.URL, req{Method: "POST", Path: "/api/v1/v1/clients", Key: kb.Key, Company: coB, Body: `{"name":"B's","nif":"5417000001"}`}); r.Status != 201 {
		t.Fatalf("same NIF other company: %d %s", r.Status, r.Body)
	}
}

func TestInvalidInput(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	in := w.start()
	k := in.key(t, coA, invoicing.Live, allScopes)
	get := func(path string) resp { return do(t, in.pub.URL, req{Path: path, Key: k.Key, Company: coA}) }
	for _, path := range []string{
		"/api/v1/v1/invoices?pageSize=101", "/api/v1/v1/invoices?pageSize=0", "/api/v1/v1/invoices?page=0",
		"/api/v1/v1/invoices?page=abc", "/api/v1/v1/invoices?status=overdue", "/api/v1/v1/invoices?type=XX",
		"/api/v1/v1/invoices?from=2026-02-30", "/api/v1/v1/invoices?from=2026-03-02&to=2026-03-01",
		"/api/v1/v1/invoices?pagesize=5", "/api/v1/v1/invoices?page=1&page=2", "/api/v1/v1/clients?search=" + strings.Repeat("x", 101),
		"/api/v1/v1/clients?q=x", "/api/v1/v1/clients/00000000-0000-4000-8000-000000000000?x=1",
	} {
		m := expectProblem(t, get(path), 400, "invalid_parameter")
		if errs, _ := m["errors"].([]any); len(errs) == 0 {
			t.Errorf("%s: no errors[]: %v", path, m)
		}
	}
	post := func(body, ct string) resp {
		return do(t, in.pub.URL, req{Method: "POST", Path: "/api/v1/v1/clients", Key: k.Key, Company: coA, Body: body, ContentType: ct})
	}
	bodies := map[string]string{
		`{}`:             "name",
		`{"name":"   "}`: "name",
		`{"name":null}`:  "name",
		`{"name":42}`:    "name",
		`{"name":"` + strings.Repeat("n", 201) + `"}`:               "name",
		`{"name":"x","nif":"12345"}`:                                "nif",
		`{"name":"x","nif":"999999999"}`:                            "nif",
		`{"name":"x","email":"not-an-email"}`:                       "email",
		`{"name":"x","email":"A <a@b.ao>"}`:                         "email",
		`{"name":"x","phone":"923456789"}`:                          "phone",
		`{"name":"x","phone":"+351912345678"}`:                      "phone",
		`{"name":"x","type":"company"}`:                             "type",
		`{"name":"x","address":"` + strings.Repeat("a", 501) + `"}`: "address",
		`{"name":"x","id":"00000000-0000-4000-8000-000000000000"}`:  "id",
		`{"name":"x","createdAt":"2020-01-01T00:00:00Z"}`:           "createdAt",
		`{"name":"x","name":"y"}`:                                   "name",
		`[]`:                                                        "body",
		`{"name":"x"} {}`:                                           "body",
		`{"name":"x"`:                                               "body",
	}
	for body, field := range bodies {
		m := expectProblem(t, post(body, ""), 400, "invalid_body")
		found := false
		for _, e := range m["errors"].([]any) {
			if e.(map[string]any)["field"] == field {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: no error on %s: %v", body, field, m["errors"])
		}
	}
	expectProblem(t, post(`{"name":"x"}`, "text/plain"), 415, "unsupported_media_type")
	expectProblem(t, post(`name=x`, "application/x-www-form-urlencoded"), 415, "unsupported_media_type")
	expectProblem(t, post(`{"name":"`+strings.Repeat("x", 70<<10)+`"}`, ""), 413, "body_too_large")
	// None of it created anything.
	p := getPage(t, in.pub.URL, req{Path: "/api/v1/v1/clients?search=x&pageSize=100", Key: k.Key, Company: coA})
	for _, d := range p.Data {
		if d["name"] == "x" {
			t.Fatalf("an invalid request created a client: %v", d)
		}
	}
}

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
	if _, err := in.adm.SetCompanyLimit(t.Context(), testActor, coA, "LIVE", 0.5, 2); err != nil {
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
	if _, err := in.adm.ResetCompanyLimits(t.Context(), testActor, coA); err != nil {
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

func urlQuery(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, " ", "+"), "&", "%26")
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
