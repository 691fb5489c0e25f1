package gateway_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

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

func urlQuery(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, " ", "+"), "&", "%26")
}
