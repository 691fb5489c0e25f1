package main

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/invoicing-ao/gateway/admin"
	"github.com/invoicing-ao/gateway/authz"
	"github.com/invoicing-ao/gateway/backend/gendata"
	"github.com/invoicing-ao/gateway/cmd/gateway/internal/config"
	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
)

// trustedProxies travels from the environment to the running handler: a
// forwarded address is believed from a listed proxy only; a bad network
// stops start-up naming the setting.
func TestTrustedProxiesSetting(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	live, test := "sqlite:"+filepath.Join(dir, "live.db"), "sqlite:"+filepath.Join(dir, "test.db")
	if _, err := gendata.SetUpSmall(t.Context(), live, test, 3); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{
		"GATEWAY_LIVE_DATABASE_URL": live, "GATEWAY_TEST_DATABASE_URL": test, "GATEWAY_HISTORY_DATABASE_URL": testenv.Postgres(t),
		"GATEWAY_TRUSTED_PROXIES": "10.0.0.0/8, 2001:db8:ffff::/48",
	}
	cfg, err := config.Load("../../configs/gateway.yaml", envOf(env), config.NeedAll)
	if err != nil {
		t.Fatal(err)
	}
	rdb, _ := testenv.Miniredis(t)
	d, err := connectWith(t.Context(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), rdb)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	scopes, _ := authz.ParseScopes("clients:read")
	k, err := d.admin.Keys.CreateKey(t.Context(), "test@local", admin.KeySpec{CompanyID: gendata.DemoCompanyA,
		Mode: invoicing.Live, Scopes: scopes, AllowedCIDRs: []string{"203.0.113.0/24"}})
	if err != nil {
		t.Fatal(err)
	}
	h := d.server.Handler()
	for _, c := range []struct {
		peer, xff string
		want      int
	}{
		{"10.1.2.3:80", "203.0.113.4", 200},
		{"[2001:db8:ffff::1]:80", "203.0.113.4", 200},
		{"192.0.2.1:80", "203.0.113.4", 403},
		{"10.1.2.3:80", "198.51.100.1", 403},
	} {
		r := httptest.NewRequest(http.MethodGet, "/api/v1/v1/clients", nil)
		r.RemoteAddr = c.peer
		r.Header.Set("Authorization", "Bearer "+k.Key)
		r.Header.Set("X-Company-Id", gendata.DemoCompanyA)
		r.Header.Set("X-Forwarded-For", c.xff)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		var p struct{ Code string }
		_ = json.Unmarshal(w.Body.Bytes(), &p)
		if w.Code != c.want || (c.want == 403 && p.Code != "source_not_allowed") {
			t.Errorf("peer %s, forwarded for %s: %d %s, want %d", c.peer, c.xff, w.Code, p.Code, c.want)
		}
	}
	for _, bad := range []string{"10.0.0.0/33", "lb.internal", "10.0.0.0/8 10.1.0.0/16"} {
		env["GATEWAY_TRUSTED_PROXIES"] = bad
		if _, err := config.Load("", envOf(env), config.NeedAll); err == nil || !strings.Contains(err.Error(), "GATEWAY_TRUSTED_PROXIES (trustedProxies)") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
