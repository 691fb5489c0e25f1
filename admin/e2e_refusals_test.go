package admin_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// A refused change is said once, in its user's words, naming the field:
// never a package's prefix or an error's chain, never the same thing twice.
func TestRefusalsNameTheField(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	in := w.start()
	long := strings.Repeat("n", 101)
	for _, c := range []struct {
		method, path, body string
		field, why         string // the field named, and a fragment of why
	}{
		{"PUT", "/admin/v1/companies/" + coA + "/limits", `{"rate":1000000,"burst":5}`, "rate", "must be from 0.001 to 100000 requests per second"},
		{"PUT", "/admin/v1/companies/" + coA + "/limits", `{"mode":"TEST","rate":10,"burst":0}`, "burst", "must be a whole number of requests from 1 to 100000"},
		{"POST", "/admin/v1/companies/" + coA + "/webhooks", `{"mode":"LIVE","url":"https://10.1.2.3/hooks"}`, "url", "must point to a public address: 10.1.2.3 is a private address"},
		{"POST", "/admin/v1/companies/" + coA + "/webhooks", `{"mode":"LIVE","url":"ftp://10.1.2.3/hooks"}`, "url", `must use https, not "ftp"`},
		{"POST", "/admin/v1/companies/" + coA + "/webhooks", `{"mode":"LIVE","url":"https://hooks.example.com/w","types":["invoice.refunded"]}`, "types", `"invoice.refunded" is not an event type`},
		{"POST", "/admin/v1/keys", `{"companyId":"` + coA + `","mode":"LIVE","scopes":["invoices:write"]}`, "scopes", `must be among invoices:read, clients:read, clients:write, events:read: "invoices:write" is not a scope`},
		{"POST", "/admin/v1/keys", `{"companyId":"` + coA + `","mode":"LIVE","scopes":["invoices:read"],"allowedCidrs":["300.1.1.1/8"]}`, "allowedCidrs", `"300.1.1.1/8" is not a CIDR`},
		{"POST", "/admin/v1/keys", `{"companyId":"` + coA + `","mode":"LIVE","scopes":["invoices:read"],"name":"` + long + `"}`, "name", "must be at most 100 bytes of printable text"},
	} {
		m := expectProblem(t, in.adminCall(t, req{Method: c.method, Path: c.path, Body: c.body}), 400, "invalid_body")
		var p struct {
			Detail string
			Errors []struct{ Field, Message string }
		}
		b, _ := json.Marshal(m)
		if err := json.Unmarshal(b, &p); err != nil {
			t.Fatal(err)
		}
		if len(p.Errors) != 1 || p.Errors[0].Field != c.field || !strings.Contains(p.Errors[0].Message, c.why) {
			t.Errorf("%s %s: errors %+v, want %s: …%s…", c.method, c.body, p.Errors, c.field, c.why)
		}
		said := p.Detail
		if len(p.Errors) == 1 && !strings.Contains(said, p.Errors[0].Field+" "+p.Errors[0].Message) {
			said += " " + p.Errors[0].Field + ": " + p.Errors[0].Message // as the console and the CLI show it
		}
		// A package's prefix is its name, a colon and a space ("events: …");
		// a scope's name ("events:read") is the user's word.
		for _, internal := range []string{"tenants: ", "authz: ", "events: ", "audit: ", "invalid webhook endpoint", "invalid limit", "url's host", "lookup "} {
			if strings.Contains(said, internal) {
				t.Errorf("%s %s: %q shows %q", c.method, c.body, said, internal)
			}
		}
		if rep := repeated(said); rep != "" {
			t.Errorf("%s %s: %q says %q twice", c.method, c.body, said, rep)
		}
	}
}
