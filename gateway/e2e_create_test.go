package gateway_test

import (
	"strings"
	"testing"

	"github.com/invoicing-ao/gateway/invoicing"
)

// Creating clients through the API, and the input it refuses.

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
