package web

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
		tok, ok := Bearer(c.in)
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
		q := ParseQuery(c.raw, "page", "pageSize")
		p, s := q.Int("page", 1, 1, 1_000_000), q.Int("pageSize", 20, 1, 100)
		if p != c.page || s != c.size {
			t.Errorf("%q: page %d size %d", c.raw, p, s)
		}
		if c.badField == "" && q.Err() != nil {
			t.Errorf("%q: unexpected %v", c.raw, q.Err())
		}
		if c.badField != "" {
			var e *Error
			if !errors.As(q.Err(), &e) || len(e.Fields) == 0 || e.Fields[0].Field != c.badField {
				t.Errorf("%q: error %v, want one on %s", c.raw, q.Err(), c.badField)
			}
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
		rec := answerError(Answers{}, c.err)
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
	c := newChain(Config{})
	h := c.withRequestID(c.writeAnswers(withRecover(func(http.ResponseWriter, *http.Request) (Answer, error) { panic("secret internals") })))
	rec := httptest.NewRecorder()
	_, _ = h(rec, httptest.NewRequest("GET", "/", nil))
	if rec.Code != 500 || strings.Contains(rec.Body.String(), "secret internals") || !strings.Contains(rec.Body.String(), `"internal_error"`) {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
}

func TestCeilSeconds(t *testing.T) {
	for d, want := range map[time.Duration]int{0: 1, time.Millisecond: 1, time.Second: 1, 1001 * time.Millisecond: 2, 4 * time.Second: 4} {
		if got := CeilSeconds(d); got != want {
			t.Errorf("CeilSeconds(%v) = %d, want %d", d, got, want)
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
