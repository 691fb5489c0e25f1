package gateway

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/audit"
	"github.com/invoicing-ao/gateway/authz"
	"github.com/invoicing-ao/gateway/backend"
	"github.com/invoicing-ao/gateway/invoicing"
	"github.com/invoicing-ao/gateway/tenants"
)

func TestBearer(t *testing.T) {
	cases := []struct {
		in, tok string
		ok      bool
	}{
		{"Bearer abc", "abc", true},
		{"bearer abc", "abc", true},
		{"BEARER   abc", "abc", true},
		{"Bearer", "", false},
		{"Bearer ", "", false},
		{"Bearer a b", "", false},
		{"Basic abc", "", false},
		{"Bearerabc", "", false},
		{"", "", false},
	}
	for _, c := range cases {
		tok, ok := bearer(c.in)
		if tok != c.tok || ok != c.ok {
			t.Errorf("bearer(%q) = %q, %v; want %q, %v", c.in, tok, ok, c.tok, c.ok)
		}
	}
}

func TestSaneRequestID(t *testing.T) {
	for in, want := range map[string]bool{
		"abc-123": true, "a.b_c:d": true, strings.Repeat("a", 128): true,
		"": false, strings.Repeat("a", 129): false, "a b": false, "a\nb": false, "ação": false, `"x"`: false,
	} {
		if got := saneRequestID(in); got != want {
			t.Errorf("saneRequestID(%q) = %v", in, got)
		}
	}
}

func TestQueryParsing(t *testing.T) {
	cases := []struct {
		raw      string
		page     int
		size     int
		badField string
	}{
		{"", 1, 20, ""},
		{"page=3&pageSize=100", 3, 100, ""},
		{"pageSize=101", 1, 20, "pageSize"},
		{"page=0", 1, 20, "page"},
		{"page=-1", 1, 20, "page"},
		{"page=1000001", 1, 20, "page"},
		{"page=1.5", 1, 20, "page"},
		{"page=99999999999999999999999", 1, 20, "page"},
		{"page=1&page=1", 1, 20, "page"},
		{"pagesize=5", 1, 20, "pagesize"},
		{"page=%zz", 1, 20, "query"},
	}
	for _, c := range cases {
		q := parseQuery(c.raw, "page", "pageSize")
		p, s := q.page()
		if p != c.page || s != c.size {
			t.Errorf("%q: page %d size %d", c.raw, p, s)
		}
		if c.badField == "" && q.err() != nil {
			t.Errorf("%q: unexpected %v", c.raw, q.err())
		}
		if c.badField != "" {
			var e *Error
			if !errors.As(q.err(), &e) || len(e.Fields) == 0 || e.Fields[0].Field != c.badField {
				t.Errorf("%q: error %v, want one on %s", c.raw, q.err(), c.badField)
			}
		}
	}
	q := parseQuery("from=2026-01-31&to=2026-13-01", "from", "to")
	if q.dateParam("from") != "2026-01-31" || q.dateParam("to") != "" || q.err() == nil {
		t.Errorf("dates: %v", q.err())
	}
	q = parseQuery("search=+%20Kianda%20", "search")
	if s := q.searchParam("search"); s != "Kianda" {
		t.Errorf("search trimmed to %q", s)
	}
	q = parseQuery("search=a%00b", "search")
	if q.searchParam("search"); q.err() == nil {
		t.Error("control character accepted in search")
	}
}

func TestDecodeNewClient(t *testing.T) {
	post := func(body string) (invoicing.NewClient, error) {
		r := httptest.NewRequest("POST", "/", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json; charset=utf-8")
		return decodeRequest(r)
	}
	nc, err := post(`{"name":" Ana ","nif":"000238553ca017","phone":"+244 923 456 789","email":null,"type":"INDIVIDUAL"}`)
	if err != nil {
		t.Fatal(err)
	}
	if nc.Name != "Ana" || *nc.NIF != "000238553CA017" || *nc.Phone != "+244923456789" || nc.Email != nil || *nc.Type != "INDIVIDUAL" {
		t.Fatalf("normalized: %+v", nc)
	}
	for _, ok := range []string{"123456789", "5417000001", " 541 700 0001", "000238553CA017"} {
		if _, err := post(`{"name":"x","nif":"` + ok + `"}`); err != nil {
			t.Errorf("nif %q refused: %v", ok, err)
		}
	}
	for _, bad := range []string{"999999999", "99999999", "12345678901", "000238553C017", "ABCDEFGHI", ""} {
		if _, err := post(`{"name":"x","nif":"` + bad + `"}`); err == nil {
			t.Errorf("nif %q accepted", bad)
		}
	}
	for _, bad := range []string{"a@b", "@b.ao", "a@.ao", "a@b.ao.", "a b@c.ao", "<a@b.ao>"} {
		if _, err := post(`{"name":"x","email":"` + bad + `"}`); err == nil {
			t.Errorf("email %q accepted", bad)
		}
	}
}

func TestProblemTable(t *testing.T) {
	cases := []struct {
		err    error
		status int
		code   string
	}{
		{backend.ErrNotFound, 404, "not_found"},
		{fmt.Errorf("get: %w", backend.ErrNIFConflict), 409, "nif_conflict"},
		{fmt.Errorf("%w: dial", backend.ErrUnavailable), 503, "database_unavailable"},
		{authz.ErrInvalidKey, 401, "invalid_api_key"},
		{authz.ErrUnavailable, 503, "authentication_unavailable"},
		{authz.ErrWrongCompany, 403, "company_mismatch"},
		{authz.ErrMissingScope, 403, "insufficient_scope"},
		{authz.ErrKeyLimit, 409, "key_limit_reached"},
		{authz.ErrExpiredKey, 401, "expired_api_key"},
		{fmt.Errorf("%w: it is revoked", authz.ErrNotRollable), 409, "key_not_rollable"},
		{fmt.Errorf("%w (10)", authz.ErrRollLimit), 409, "key_limit_reached"},
		{authz.ErrInvalidOverlap, 400, "invalid_body"},
		{fmt.Errorf("%w: x", authz.ErrInvalidCIDR), 400, "invalid_body"},
		{fmt.Errorf("%w: dial", audit.ErrUnavailable), 503, "audit_unavailable"},
		{tenants.ErrBusy, 429, "concurrency_limit"},
		{errors.New("boom: password=hunter2"), 500, "internal_error"},
	}
	for _, c := range cases {
		rec := httptest.NewRecorder()
		r := httptest.NewRequest("GET", "/", nil)
		_, _ = writeAnswers(func(http.ResponseWriter, *http.Request) (answer, error) { return answer{}, c.err })(rec, r)
		var body map[string]any
		_ = json.Unmarshal(rec.Body.Bytes(), &body)
		if rec.Code != c.status || body["code"] != c.code || rec.Header().Get("Content-Type") != "application/problem+json" {
			t.Errorf("%v: %d %v", c.err, rec.Code, body)
		}
		if strings.Contains(rec.Body.String(), "hunter2") {
			t.Errorf("internal detail leaked: %s", rec.Body)
		}
		if c.status == 503 && rec.Header().Get("Retry-After") != "1" {
			t.Errorf("%v: Retry-After %q", c.err, rec.Header().Get("Retry-After"))
		}
	}
}

func TestRecoverAnswers500(t *testing.T) {
	h := withRequestID(writeAnswers(withRecover(func(http.ResponseWriter, *http.Request) (answer, error) { panic("secret internals") })))
	rec := httptest.NewRecorder()
	_, _ = h(rec, httptest.NewRequest("GET", "/", nil))
	if rec.Code != 500 || strings.Contains(rec.Body.String(), "secret internals") || !strings.Contains(rec.Body.String(), `"internal_error"`) {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
}

func TestCeilSeconds(t *testing.T) {
	for d, want := range map[time.Duration]int{0: 1, time.Millisecond: 1, time.Second: 1, 1001 * time.Millisecond: 2, 4 * time.Second: 4} {
		if got := ceilSeconds(d); got != want {
			t.Errorf("ceilSeconds(%v) = %d, want %d", d, got, want)
		}
	}
}

// decodeRequest is what createClient does with a request's body.
func decodeRequest(r *http.Request) (invoicing.NewClient, error) {
	body, err := readBody(r)
	if err != nil {
		return invoicing.NewClient{}, err
	}
	return decodeNewClient(body)
}

func TestIdempotencyKeyHeader(t *testing.T) {
	for _, tc := range []struct {
		vals []string
		ok   bool
	}{
		{nil, false}, {[]string{"a"}, true}, {[]string{strings.Repeat("k", 255)}, true}, {[]string{" ~!{}"}, true},
		{[]string{""}, false}, {[]string{strings.Repeat("k", 256)}, false}, {[]string{"chave-é"}, false},
		{[]string{"tab\there"}, false}, {[]string{"\x7f"}, false}, {[]string{"nl\n"}, false}, {[]string{"a", "b"}, false},
	} {
		h := http.Header{}
		for _, v := range tc.vals {
			h.Add("Idempotency-Key", v)
		}
		key, given, err := idempotencyKey(h)
		switch {
		case tc.vals == nil:
			if given || err != nil {
				t.Errorf("no header: given %v, %v", given, err)
			}
		case tc.ok != (err == nil) || tc.ok && (!given || key != tc.vals[0]):
			t.Errorf("%q: key %q, given %v, err %v; want ok %v", tc.vals, key, given, err, tc.ok)
		case err != nil:
			asProblem(t, err, "invalid_parameter")
		}
	}
}

// A key pasted into X-Request-Id is not taken as the request id: it would be
// echoed in the answer and written to logs and spans.
func TestRequestIDNeverAKey(t *testing.T) {
	for in, want := range map[string]bool{
		"igw_live_" + strings.Repeat("a", 43): false, "IGW_TEST_abc": false, "igw_": false,
		"igw": true, "igwx-1": true, "req-igw_live_1": true,
	} {
		if got := saneRequestID(in); got != want {
			t.Errorf("saneRequestID(%q) = %v", in, got)
		}
	}
}
