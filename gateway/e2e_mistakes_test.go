package gateway_test

import (
	"strings"
	"testing"

	"github.com/invoicing-ao/gateway/invoicing"
)

// The mistakes of a first hour with the API, each answered so that it can
// be fixed from the answer alone.

// A path of the wrong form (the "/api/v1/invoices" of some release notes, a
// segment missing or doubled, a trailing slash) is a 404 route_not_found
// whose detail names the operation's path; the path sent is never echoed,
// not even a key pasted into it. Other paths, and the admin listener, get
// the plain 404.
func TestWrongPathNamesTheOperation(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	in := w.start()
	k := in.key(t, coA, invoicing.Live, allScopes)
	for _, c := range []struct{ method, path, want string }{
		{"GET", "/api/v1/invoices", "/api/v1/v1/invoices"},
		{"GET", "/v1/invoices?pageSize=2", "/api/v1/v1/invoices"},
		{"GET", "/api/invoices", "/api/v1/v1/invoices"},
		{"GET", "/invoices/", "/api/v1/v1/invoices"},
		{"GET", "/api/v1/v1/invoices/", "/api/v1/v1/invoices"},
		{"GET", "/api/v1/invoices/" + k.Key, "/api/v1/v1/invoices/{id}"},
		{"GET", "/api/v1/v1/v1/clients", "/api/v1/v1/clients"},
		{"GET", "/API/V1/Clients/Kianda-Lda/", "/api/v1/v1/clients/{id}"},
		{"POST", "/api/v1/clients", "/api/v1/v1/clients"},
	} {
		r := do(t, in.pub.URL, req{Method: c.method, Path: c.path, Key: k.Key, Company: coA, ContentType: "application/json", Body: `{"name":"x"}`})
		p := expectProblem(t, r, 404, "route_not_found")
		detail, _ := p["detail"].(string)
		if !strings.Contains(detail, "Did you mean "+c.want+"?") || !strings.Contains(detail, "/api/v1/v1/") {
			t.Errorf("%s %s: detail %q, want it to name %s", c.method, c.path, detail, c.want)
		}
		for _, leak := range []string{k.Key, "Kianda", "V1", "pageSize"} {
			if strings.Contains(string(r.Body), leak) {
				t.Errorf("%s %s: the answer echoes %q: %s", c.method, c.path, leak, r.Body)
			}
		}
	}
	plain := "No route matches this method and path."
	for _, path := range []string{"/api/v1/v1/nothing", "/api/v1/v1/invoices/a/b", "/favicon.ico", "/"} {
		p := expectProblem(t, do(t, in.pub.URL, req{Path: path, Key: k.Key, Company: coA}), 404, "route_not_found")
		if p["detail"] != plain {
			t.Errorf("%s: detail %q, want %q", path, p["detail"], plain)
		}
	}
	p := expectProblem(t, do(t, in.admin.URL, req{Path: "/api/v1/invoices", Key: in.adminToken}), 404, "route_not_found")
	if p["detail"] != plain {
		t.Errorf("admin listener: detail %q, want %q: it serves no API operation", p["detail"], plain)
	}
}

// An X-Company-Id that cannot be a company's id (a truncated UUID, a key
// pasted into the wrong header) is invalid input: 400 invalid_company_id
// naming the header, in the documented order (after the key, before the
// company's checks), without RateLimit headers, and the value is never
// echoed. A well-formed id of another company is still 403.
func TestMalformedCompanyHeader(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	in := w.start()
	k := in.key(t, coA, invoicing.Live, allScopes)
	for _, company := range []string{coA[:35], coA + "0", "{" + coA + "}", "company-a", k.Key} {
		r := do(t, in.pub.URL, req{Path: "/api/v1/v1/invoices", Key: k.Key, Company: company})
		p := expectProblem(t, r, 400, "invalid_company_id")
		errs, _ := p["errors"].([]any)
		if len(errs) != 1 || errs[0].(map[string]any)["field"] != "X-Company-Id" {
			t.Errorf("X-Company-Id %q: errors %v, want one naming X-Company-Id", company, p["errors"])
		}
		if strings.Contains(string(r.Body), company) {
			t.Errorf("X-Company-Id %q is echoed: %s", company, r.Body)
		}
		if r.Header.Get("RateLimit") != "" || r.Header.Get("RateLimit-Policy") != "" {
			t.Errorf("X-Company-Id %q: RateLimit headers on a refusal before the rate limit", company)
		}
	}
	// The key first: an unknown key with a malformed company is a 401.
	unknown := "igw_live_" + strings.Repeat("a", len(k.Key)-len("igw_live_"))
	expectProblem(t, do(t, in.pub.URL, req{Path: "/api/v1/v1/invoices", Key: unknown, Company: coA[:35]}), 401, "invalid_api_key")
	// A create with a malformed company: the header before the body.
	expectProblem(t, do(t, in.pub.URL, req{Method: "POST", Path: "/api/v1/v1/clients", Key: k.Key, Company: coA[:35],
		ContentType: "application/json", Body: `{"name":""}`}), 400, "invalid_company_id")
	expectProblem(t, do(t, in.pub.URL, req{Path: "/api/v1/v1/invoices", Key: k.Key, Company: coB}), 403, "company_mismatch")
	if r := do(t, in.pub.URL, req{Path: "/api/v1/v1/invoices?pageSize=1", Key: k.Key, Company: " " + strings.ToUpper(coA) + " "}); r.Status != 200 {
		t.Errorf("upper case, surrounding spaces: %d %s", r.Status, r.Body)
	}
}

// An unknown field does not hide the body's other mistakes: every error of
// a create is answered at once, and nothing is created.
func TestBodyErrorsAllAtOnce(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	in := w.start()
	k := in.key(t, coA, invoicing.Live, allScopes)
	body := `{"nmae":"Kianda Lda","nif":"12345","phone":"923456789","phone":"+244923456789","type":"company","createdAt":"2026-01-01T00:00:00Z"}`
	r := do(t, in.pub.URL, req{Method: "POST", Path: "/api/v1/v1/clients", Key: k.Key, Company: coA, ContentType: "application/json", Body: body})
	p := expectProblem(t, r, 400, "invalid_body")
	got := map[string]string{}
	for _, e := range p["errors"].([]any) {
		f := e.(map[string]any)
		got[f["field"].(string)] += f["message"].(string) + ";"
	}
	for field, want := range map[string]string{
		"nmae": "is not a known field", "createdAt": "is not a known field", "name": "is required",
		"nif": "must be", "phone": "is given more than once", "type": "COMPANY or INDIVIDUAL",
	} {
		if !strings.Contains(got[field], want) {
			t.Errorf("errors[%s] = %q, want %q among %v", field, got[field], want, got)
		}
	}
	// The first of a repeated member is checked too: its error is listed.
	if !strings.Contains(got["phone"], "+244 followed by 9 digits") {
		t.Errorf("the repeated phone's first value was not checked: %v", got)
	}
	if n := len(getPage(t, in.pub.URL, req{Path: "/api/v1/v1/clients?search=Kianda", Key: k.Key, Company: coA}).Data); n != 0 {
		t.Errorf("an invalid body created %d clients", n)
	}
}

// A nif_conflict names the company's client that has the NIF
// (existingClientId), in the key's mode, never another company's; a stored
// answer replayed for an Idempotency-Key names it too.
func TestNIFConflictNamesTheClient(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	in := w.start()
	a, b := in.key(t, coA, invoicing.Live, allScopes), in.key(t, coB, invoicing.Live, allScopes)
	aTest := in.key(t, coA, invoicing.Test, allScopes)
	create := func(key, company, nif string, hdr map[string]string) resp {
		return do(t, in.pub.URL, req{Method: "POST", Path: "/api/v1/v1/clients", Key: key, Company: company,
			ContentType: "application/json", Body: `{"name":"Kianda Lda","nif":"` + nif + `"}`, Header: hdr})
	}
	created := func(r resp) string {
		t.Helper()
		if r.Status != 201 {
			t.Fatalf("create: %d %s", r.Status, r.Body)
		}
		return r.json(t)["id"].(string)
	}
	conflict := func(r resp, want string) {
		t.Helper()
		p := expectProblem(t, r, 409, "nif_conflict")
		if p["existingClientId"] != want || !strings.Contains(p["detail"].(string), "/api/v1/v1/clients/"+want) {
			t.Errorf("nif_conflict names %v (%v), want %s", p["existingClientId"], p["detail"], want)
		}
	}
	first := created(create(b.Key, coB, "5417000001", nil)) // another company has it first
	mine := created(create(a.Key, coA, "5417000001", nil))
	if mine == first {
		t.Fatal("two companies' clients share an id")
	}
	conflict(create(a.Key, coA, "541 700 0001", nil), mine)
	conflict(create(b.Key, coB, "5417000001", nil), first)
	sandbox := created(create(aTest.Key, coA, "5417000001", nil)) // the sandbox is another database
	conflict(create(aTest.Key, coA, "5417000001", nil), sandbox)

	idem := map[string]string{"Idempotency-Key": "nif-conflict-1"}
	conflict(create(a.Key, coA, "5417000001", idem), mine)
	r := create(a.Key, coA, "5417000001", idem)
	conflict(r, mine)
	if r.Header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("the retry was not a replay: %v", r.Header)
	}
}
