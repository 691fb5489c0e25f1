package admin_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"

	"github.com/invoicing-ao/gateway/admin"
	"github.com/invoicing-ao/gateway/gateway"
)

// The errors the admin API makes itself are defined in this package (the
// gateway's table has none of them) and keep their statuses and titles; a
// missing setting, which no retry fixes, brings no Retry-After.
func TestAdminOwnErrors(t *testing.T) {
	const co = "0a5e7c1e-0000-4000-8000-00000000000a"
	for _, c := range []struct {
		token, auth, path string
		status            int
		code, title       string
	}{
		{"", "Bearer x", "/admin/v1/keys?companyId=" + co, 503, "admin_disabled", "Admin API disabled"},
		{"right", "", "/admin/v1/keys?companyId=" + co, 401, "unauthorized_admin", "Admin token required"},
		{"right", "Bearer wrong", "/admin/v1/keys?companyId=" + co, 401, "unauthorized_admin", "Admin token required"},
		{"right", "Bearer right", "/admin/v1/companies/not-a-company/limits", 422, "unknown_company", "Unknown company"},
		{"right", "Bearer right", "/admin/v1/companies/" + co + "/audit", 503, "audit_unavailable", "Audit log unavailable"},
		{"right", "Bearer right", "/admin/v1/companies/" + co + "/usage", 503, "usage_unavailable", "Usage unavailable"},
	} {
		quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
		srv := httptest.NewServer(admin.New(admin.Config{Token: c.token, Logger: quiet}).Handler(gateway.New(gateway.Config{Logger: quiet})))
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
