package gateway

// Fuzz targets through the whole public handler (router, middleware chain,
// authentication, rate limit, handlers) on real stores: arbitrary requests,
// the X-Company-Id header and path ids.

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/invoicing-ao/gateway/backend/gendata"
	"github.com/invoicing-ao/gateway/invoicing"
)

// sharedGateway builds the handler a target fuzzes; with -fuzz every worker
// process builds its own once, in about a tenth of a second.
func sharedGateway(f *testing.F) *localGateway { return newLocalGateway(f, nil) }

var fuzzMethods = []string{"GET", "POST", "PUT", "DELETE", "OPTIONS", "HEAD", "PATCH"}

// authHeader picks the Authorization header: a real key (so the fuzzer gets
// past authentication), none, or the fuzzer's own text.
func (g *localGateway) authHeader(sel byte, raw string) string {
	switch sel % 8 {
	case 0:
		return ""
	case 1:
		return "Bearer " + g.keys["aLive"]
	case 2:
		return "Bearer " + g.keys["aTest"]
	case 3:
		return "Bearer " + g.keys["aRead"]
	case 4:
		return "Bearer " + g.keys["bLive"]
	default:
		return raw
	}
}

func companyHeader(sel byte, raw string) string {
	switch sel % 4 {
	case 0:
		return gendata.DemoCompanyA
	case 1:
		return gendata.DemoCompanyB
	case 2:
		return ""
	default:
		return raw
	}
}

// FuzzRequest sends anything at the handler. Whatever comes in, the answer is
// never a 5xx, always carries the security headers, is a problem from the
// table when it is an error, and a successful list shows only company A's
// own rows to A's keys.
func FuzzRequest(f *testing.F) {
	g := sharedGateway(f)
	f.Add(byte(0), "/api/v1/v1/invoices?page=1", byte(1), "", byte(0), "", []byte(nil), "")
	f.Add(byte(1), "/api/v1/v1/clients", byte(1), "", byte(0), "", []byte(`{"name":"Fuzz Lda","nif":"123456789"}`), "application/json")
	f.Add(byte(0), "/api/v1/v1/clients?search=kianda&pageSize=100", byte(3), "", byte(0), "", []byte(nil), "")
	f.Add(byte(0), "/api/v1/v1/invoices/0a5e7c1e-0000-4000-8000-00000000000a", byte(2), "", byte(0), "", []byte(nil), "")
	f.Add(byte(0), "/api/v1/v1/clients/../invoices", byte(6), "Bearer igw_live_x", byte(3), " 0A5E7C1E-0000-4000-8000-00000000000A ", []byte(nil), "")
	f.Add(byte(4), "/api/v1/v1/clients", byte(1), "", byte(0), "", []byte(nil), "")
	f.Add(byte(0), "/admin/v1/keys?companyId=x", byte(7), "Bearer local-admin-token", byte(2), "", []byte(nil), "")
	f.Add(byte(1), "/api/v1/v1/clients?x=%zz", byte(1), "", byte(1), "", []byte(`{"name":`), "application/json; charset=utf-16")
	f.Fuzz(func(t *testing.T, method byte, target string, authSel byte, authRaw string, coSel byte, coRaw string, body []byte, contentType string) {
		u, err := url.ParseRequestURI(target)
		if err != nil {
			return // net/http answers 400 before any handler runs
		}
		m := fuzzMethods[int(method)%len(fuzzMethods)]
		r := &http.Request{Method: m, URL: u, RequestURI: target, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header: http.Header{}, Body: http.NoBody, Host: "api.example.ao"}
		if body != nil {
			r.Body = io.NopCloser(bytes.NewReader(body))
			r.ContentLength = int64(len(body))
		}
		r = r.WithContext(t.Context())
		if a := g.authHeader(authSel, authRaw); a != "" {
			r.Header.Set("Authorization", a)
		}
		if c := companyHeader(coSel, coRaw); c != "" {
			r.Header.Set("X-Company-Id", c)
		}
		if contentType != "" {
			r.Header.Set("Content-Type", contentType)
		}
		w := g.serve(r)
		checkAnswer(t, m+" "+target, w)
		if w.Code != http.StatusOK || m != http.MethodGet || authSel%8 == 4 {
			return
		}
		var page struct {
			Data []struct {
				ID string `json:"id"`
			} `json:"data"`
		}
		if json.Unmarshal(w.Body.Bytes(), &page) == nil {
			for _, d := range page.Data {
				if g.otherID[d.ID] {
					t.Fatalf("%s with a key of company A listed company B's %s", target, d.ID)
				}
			}
		}
	})
}

// FuzzCompanyHeader: a key of company A is admitted exactly when the header
// names company A (any letter case, surrounding spaces ignored); anything
// else is 400 missing_company_id (blank), 400 invalid_company_id (not a
// UUID) or 403 company_mismatch (another UUID), each the same answer
// whatever the header holds.
func FuzzCompanyHeader(f *testing.F) {
	g := sharedGateway(f)
	for _, s := range []string{gendata.DemoCompanyA, strings.ToUpper(gendata.DemoCompanyA), " " + gendata.DemoCompanyA + "\t",
		gendata.DemoCompanyB, gendata.DemoCompanySuspended, "00000000-0000-4000-8000-000000000000", "", " ", "x",
		gendata.DemoCompanyA + "\x00", "\u00a0" + gendata.DemoCompanyA, strings.Repeat("a", 5000), gendata.DemoCompanyA[:35]} {
		f.Add(s)
	}
	same := map[string][]byte{} // code → the first answer's body
	f.Fuzz(func(t *testing.T, company string) {
		r, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, "/api/v1/v1/clients?pageSize=1", nil)
		r.Header.Set("Authorization", "Bearer "+g.keys["aLive"])
		r.Header.Set("X-Company-Id", company)
		w := g.serve(r)
		p := checkAnswer(t, "X-Company-Id "+company, w)
		trimmed := strings.TrimSpace(company)
		_, isUUID := invoicing.CanonicalUUID(trimmed)
		switch {
		case w.Code == http.StatusOK:
			if asciiLower(trimmed) != gendata.DemoCompanyA {
				t.Fatalf("X-Company-Id %q admitted a key of company A", company)
			}
		case trimmed == "":
			if p.Code != "missing_company_id" {
				t.Fatalf("blank X-Company-Id %q: %s", company, w.Body)
			}
		default:
			want := "company_mismatch"
			if !isUUID {
				want = "invalid_company_id"
			}
			if p.Code != want {
				t.Fatalf("X-Company-Id %q: %d %s, want %s", company, w.Code, w.Body, want)
			}
			// The answer says nothing of the header's value: apart from the
			// request id, every answer of the code reads the same.
			body := withoutRequestID(t, w.Body.Bytes())
			if same[want] == nil {
				same[want] = body
			} else if !bytes.Equal(body, same[want]) {
				t.Fatalf("%s answers differ:\n%s\n%s", want, body, same[want])
			}
		}
	})
}

// FuzzPathID: any id in an invoice or client path is either one of the
// caller's own rows (200) or answered exactly like an unknown UUID.
func FuzzPathID(f *testing.F) {
	g := sharedGateway(f)
	for id := range g.otherID {
		f.Add(byte(0), id)
		f.Add(byte(1), id)
		break
	}
	for id := range g.ownIDs {
		f.Add(byte(0), id)
		f.Add(byte(1), strings.ToUpper(id))
		break
	}
	for _, s := range []string{"x", "00000000-0000-4000-8000-000000000000", "' OR 1=1 --", "%00", "..", "a/b",
		"0a5e7c1e-0000-4000-8000-00000000000A", "{{id}}", strings.Repeat("f", 36)} {
		f.Add(byte(0), s)
	}
	unknown := map[string][]byte{}
	for _, kind := range []string{"invoices", "clients"} {
		r, _ := http.NewRequest(http.MethodGet, "/api/v1/v1/"+kind+"/00000000-0000-4000-8000-0000000000ff", nil)
		r.Header.Set("Authorization", "Bearer "+g.keys["aLive"])
		r.Header.Set("X-Company-Id", gendata.DemoCompanyA)
		unknown[kind] = g.serve(r).Body.Bytes()
	}
	f.Fuzz(func(t *testing.T, kindSel byte, id string) {
		kind := []string{"invoices", "clients"}[kindSel%2]
		if id == "" || strings.Contains(id, "/") {
			return // another route: FuzzRequest covers it
		}
		path := "/api/v1/v1/" + kind + "/" + url.PathEscape(id)
		u, err := url.ParseRequestURI(path)
		if err != nil {
			return
		}
		r := &http.Request{Method: http.MethodGet, URL: u, RequestURI: path, Header: http.Header{}, Body: http.NoBody,
			Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1}
		r = r.WithContext(t.Context())
		r.Header.Set("Authorization", "Bearer "+g.keys["aLive"])
		r.Header.Set("X-Company-Id", gendata.DemoCompanyA)
		w := g.serve(r)
		checkAnswer(t, path, w)
		switch w.Code {
		case http.StatusOK:
			if !g.ownIDs[asciiLower(id)] {
				t.Fatalf("%s answered 200 for an id that is not company A's", path)
			}
		case http.StatusNotFound:
			if got, want := withoutRequestID(t, w.Body.Bytes()), withoutRequestID(t, unknown[kind]); !bytes.Equal(got, want) {
				t.Fatalf("%s: not found differently from an unknown id:\n%s\n%s", path, got, want)
			}
		default:
			t.Fatalf("%s: %d %s", path, w.Code, w.Body)
		}
	})
}

func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// withoutRequestID re-encodes a problem body without its requestId.
func withoutRequestID(t *testing.T, body []byte) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("not JSON: %s", body)
	}
	delete(m, "requestId")
	out, _ := json.Marshal(m)
	return out
}
