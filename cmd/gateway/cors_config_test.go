package main

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/invoicing-ao/gateway/cmd/gateway/internal/config"
	"github.com/invoicing-ao/gateway/internal/testenv"
)

// corsAllowedOrigins travels from the environment to the running handler,
// and a wildcard or a malformed origin stops start-up naming the setting.
func TestCORSSetting(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	env := map[string]string{
		"GATEWAY_LIVE_DATABASE_URL":    "sqlite:" + filepath.Join(dir, "live.db"),
		"GATEWAY_TEST_DATABASE_URL":    "sqlite:" + filepath.Join(dir, "test.db"),
		"GATEWAY_HISTORY_DATABASE_URL": "sqlite:" + filepath.Join(dir, "gateway.db"),
		"GATEWAY_CORS_ALLOWED_ORIGINS": "https://app.example.ao, http://localhost:3000",
	}
	cfg, err := config.Load("", envOf(env), config.NeedAll)
	if err != nil {
		t.Fatal(err)
	}
	rdb, _ := testenv.Miniredis(t)
	d, err := connectWith(t.Context(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), rdb)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	h := d.server.Handler()
	for origin, want := range map[string]string{"http://localhost:3000": "http://localhost:3000", "https://other.example": ""} {
		r := httptest.NewRequest(http.MethodOptions, "/api/v1/v1/clients", nil)
		r.Header.Set("Origin", origin)
		r.Header.Set("Access-Control-Request-Method", "POST")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if got := w.Header().Get("Access-Control-Allow-Origin"); got != want {
			t.Errorf("preflight from %s: %d, Access-Control-Allow-Origin %q, want %q", origin, w.Code, got, want)
		}
	}
	for _, bad := range []string{"*", "https://app.example.ao/path", "app.example.ao"} {
		env["GATEWAY_CORS_ALLOWED_ORIGINS"] = bad
		if _, err := config.Load("", envOf(env), config.NeedAll); err == nil || !strings.Contains(err.Error(), "GATEWAY_CORS_ALLOWED_ORIGINS (corsAllowedOrigins)") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
