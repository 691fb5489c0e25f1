package admin_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode"

	"github.com/invoicing-ao/gateway/admin"
	"github.com/invoicing-ao/gateway/web"
)

// The errors the admin API makes itself are defined in this package (the
// gateway's table has none of them) and keep their statuses and titles; a
// missing setting, which no retry fixes, brings no Retry-After.
func TestAdminOwnErrors(t *testing.T) {
	t.Parallel()
	const co = "0a5e7c1e-0000-4000-8000-00000000000a"
	for _, c := range []struct {
		token, auth, path string
		status            int
		code, title       string
	}{
		{"", "Bearer x", "/admin/v1/keys?companyId=" + co, 503, "admin_disabled", "Admin API disabled"},
		{"right", "", "/admin/v1/keys?companyId=" + co, 401, "unauthorized_admin", "Admin token required"},
		{"right", "Bearer wrong", "/admin/v1/keys?companyId=" + co, 401, "invalid_admin_token", "Wrong admin token"},
		{"right", "Basic right", "/admin/v1/keys?companyId=" + co, 401, "invalid_admin_token", "Wrong admin token"},
		{"right", "Bearer right", "/admin/v1/companies/not-a-company/limits", 422, "unknown_company", "Unknown company"},
		{"right", "Bearer right", "/admin/v1/companies/" + co + "/audit", 503, "audit_unavailable", "Audit log unavailable"},
		{"right", "Bearer right", "/admin/v1/companies/" + co + "/usage", 503, "usage_unavailable", "Usage unavailable"},
		{"right", "Bearer right", "/admin/v1/companies/" + co + "/limits/whatif?mode=LIVE&rate=1&burst=1", 503, "usage_unavailable", "Usage unavailable"},
		{"right", "Bearer right", "/admin/v1/companies/" + co + "/limits/shape?mode=LIVE", 503, "usage_unavailable", "Usage unavailable"},
		{"right", "Bearer right", "/admin/v1/limits/headroom", 503, "usage_unavailable", "Usage unavailable"},
	} {
		quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
		srv := httptest.NewServer(web.Listener(web.Config{Logger: quiet, HostCheck: true}, admin.New(admin.Config{Token: c.token, Logger: quiet}).Routes))
		r := do(t, srv.URL, req{Path: c.path, Header: map[string]string{"Authorization": c.auth}})
		srv.Close()
		var p struct {
			Status      int
			Code, Title string
		}
		if err := json.Unmarshal(r.Body, &p); err != nil {
			t.Fatalf("%s: %v: %s", c.path, err, r.Body)
		}
		if r.Status != c.status || p.Status != c.status || p.Code != c.code || p.Title != c.title {
			t.Errorf("%s (token %q, %q): %d %+v, want %d %s %q", c.path, c.token, c.auth, r.Status, p, c.status, c.code, c.title)
		}
		if ra := r.Header.Get("Retry-After"); ra != "" {
			t.Errorf("%s: %s with Retry-After %s", c.path, c.code, ra)
		}
	}
}

// A change without a proper X-Actor is refused as the header problem it is,
// titled so, its detail said once (no phrase of it twice), the header named
// as the field.
func TestActorErrors(t *testing.T) {
	t.Parallel()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv := httptest.NewServer(web.Listener(web.Config{Logger: quiet, HostCheck: true}, admin.New(admin.Config{Token: "right", Logger: quiet}).Routes))
	defer srv.Close()
	for _, c := range []struct {
		actors      []string // the X-Actor headers sent
		code, title string
		why         string // the field's message
	}{
		{nil, "missing_actor", "Missing X-Actor header", "is required"},
		{[]string{" "}, "missing_actor", "Missing X-Actor header", "is required"},
		{[]string{strings.Repeat("a", 201)}, "invalid_actor", "Invalid X-Actor header", "is longer than 200 bytes"},
		{[]string{"ana\tbruno"}, "invalid_actor", "Invalid X-Actor header", "must be printable text"},
		{[]string{"igw_live_pasted"}, "invalid_actor", "Invalid X-Actor header", "looks like an API key or a webhook signing secret"},
		// A webhook signing secret pasted where the name goes, plain or
		// percent-encoded, would be the audit log's actor and be logged.
		{[]string{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}, "invalid_actor", "Invalid X-Actor header", "looks like an API key or a webhook signing secret"},
		{[]string{"ana whsec%5FMfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}, "invalid_actor", "Invalid X-Actor header", "looks like an API key or a webhook signing secret"},
		// Invisible fillers, refused in names, would show an empty actor.
		{[]string{"\u3164"}, "invalid_actor", "Invalid X-Actor header", "must not contain invisible or direction-changing characters (U+3164)"},
		{[]string{"ana\u115f"}, "invalid_actor", "Invalid X-Actor header", "must not contain invisible or direction-changing characters (U+115F)"},
		{[]string{"ana", "bruno"}, "invalid_actor", "Invalid X-Actor header", "is given more than once"},
	} {
		r, err := http.NewRequest("POST", srv.URL+"/admin/v1/keys", strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		r.Header.Set("Authorization", "Bearer right")
		r.Header.Set("Content-Type", "application/json")
		for _, a := range c.actors {
			r.Header.Add("X-Actor", a)
		}
		res, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		var p struct {
			Status              int
			Code, Title, Detail string
			Errors              []struct{ Field, Message string }
		}
		err = json.NewDecoder(res.Body).Decode(&p)
		res.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if res.StatusCode != 400 || p.Code != c.code || p.Title != c.title || len(p.Errors) != 1 || p.Errors[0].Field != "X-Actor" || p.Errors[0].Message != c.why {
			t.Errorf("X-Actor %q: %d %+v, want 400 %s %q with X-Actor %q", c.actors, res.StatusCode, p, c.code, c.title, c.why)
		}
		if rep := repeated(p.Detail); rep != "" {
			t.Errorf("X-Actor %q: the detail says %q twice: %q", c.actors, rep, p.Detail)
		}
	}
}

// repeated is a phrase of four words or more that s holds twice; "" if none.
func repeated(s string) string {
	w := strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '-' })
	seen := map[string]bool{}
	for i := 0; i+4 <= len(w); i++ {
		p := strings.Join(w[i:i+4], " ")
		if seen[p] {
			return p
		}
		seen[p] = true
	}
	return ""
}
