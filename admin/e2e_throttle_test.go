package admin_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/admin"
)

// A flood of wrong admin tokens is throttled per source: ten are answered
// 401, then every request from that address is 429 with Retry-After,
// unchecked, the right token included, until a wrong token a second is
// all it may send. Each wrong token is logged with the address it came
// from, and the start of the throttling once; the token never is.
func TestWrongAdminTokensThrottled(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	in := w.start()
	get := func(tok string) resp {
		return do(t, in.admin.URL, req{Path: "/admin/v1/keys?companyId=" + coA, Header: map[string]string{"Authorization": "Bearer " + tok}})
	}
	for i := range admin.FailureBurst {
		expectProblem(t, get("guess-"+string(rune('a'+i))), 401, "invalid_admin_token")
	}
	for _, tok := range []string{"guess-z", in.adminToken} {
		r := get(tok)
		expectProblem(t, r, 429, "admin_token_throttled")
		if r.Header.Get("Retry-After") != "1" {
			t.Errorf("Retry-After %q", r.Header.Get("Retry-After"))
		}
	}
	// No token at all guesses nothing and is not counted: still refused.
	expectProblem(t, do(t, in.admin.URL, req{Path: "/admin/v1/keys?companyId=" + coA}), 401, "unauthorized_admin")
	in.clock.Add(time.Second)
	if r := get(in.adminToken); r.Status != 200 {
		t.Fatalf("a second later, the right token: %d %s", r.Status, r.Body)
	}
	wrong, throttled := 0, 0
	for _, l := range strings.Split(in.logs.String(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) != nil {
			continue
		}
		switch m["msg"] {
		case "admin: wrong admin token":
			wrong++
		case "admin: wrong admin tokens throttled":
			throttled++
		default:
			continue
		}
		if m["source"] != "127.0.0.1" || strings.Contains(l, "guess-") || strings.Contains(l, in.adminToken) {
			t.Errorf("log line %s", l)
		}
	}
	if wrong != admin.FailureBurst || throttled != 1 {
		t.Errorf("%d wrong tokens and %d throttlings logged, want %d and 1", wrong, throttled, admin.FailureBurst)
	}
}
