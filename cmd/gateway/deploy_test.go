package main

// Offline checks of deploy/: no container engine or cluster runs here, so the
// manifests are rendered and compared with what the gateway really reads and
// serves. They live in package main to use config.Config's env tags, loadConfig and
// the real handler rather than copies of them.

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/invoicing-ao/gateway/backend/gendata"
	"github.com/invoicing-ao/gateway/cmd/gateway/internal/config"
)

const (
	repoRoot   = "../.."
	shippedCfg = repoRoot + "/configs/gateway.yaml"
)

// settingEnvNames is every GATEWAY_* variable the gateway reads.
func settingEnvNames() map[string]bool {
	names := map[string]bool{}
	t := reflect.TypeOf(config.Config{})
	for i := 0; i < t.NumField(); i++ {
		if e := t.Field(i).Tag.Get("env"); e != "" {
			names[e] = true
		}
	}
	return names
}

// checkEnvNames fails on a GATEWAY_* variable that is no setting (a typo
// would be silently ignored by the gateway) and on variables that are
// neither settings nor OpenTelemetry's standard OTEL_*.
func checkEnvNames(t *testing.T, where string, names []string) {
	t.Helper()
	known := settingEnvNames()
	for _, n := range names {
		switch {
		case strings.HasPrefix(n, "GATEWAY_") && !known[n]:
			t.Errorf("%s sets %s, which is not a gateway setting", where, n)
		case !strings.HasPrefix(n, "GATEWAY_") && !strings.HasPrefix(n, "OTEL_"):
			t.Errorf("%s sets %s, which the gateway does not read", where, n)
		}
	}
}

// placeholder stands in for a value that comes from a secret or the
// operator's environment, of the shape the setting needs.
func placeholder(name string) string {
	switch {
	case strings.HasSuffix(name, "_DATABASE_URL"):
		return "postgres://secret@db.invalid/" + strings.ToLower(name)
	case strings.HasSuffix(name, "_REPLICA_URL"):
		return "" // optional: absent unless the secret has it
	case name == "GATEWAY_REDIS_URL":
		return "redis://redis.invalid:6379/0"
	case name == "GATEWAY_WEBHOOK_SECRETS_KEY":
		return testSecretsKey
	case name == "GATEWAY_WEBHOOK_SECRETS_OLD_KEYS":
		return "" // optional: absent unless the secret has it
	case name == "GATEWAY_ADMIN_TOKEN":
		return testAdminToken // as strong as the secret must be
	}
	return "secret"
}

// portOf is the port of a host:port setting.
func portOf(t *testing.T, addr string) int {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatalf("%q: %v", addr, err)
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		t.Fatalf("%q: port is not a number", addr)
	}
	return n
}

var (
	probeOnce    sync.Once
	probeHandler http.Handler
	probeDeps    *deps // the same gateway's dependencies (deploy_observability_test.go scrapes it)
	probeErr     error
)

// servedStatus is the status the real public handler gives a GET of path,
// built once on an in-process Redis and SQLite databases with the schema
// (the demo's wiring): health paths need no key.
func servedStatus(t *testing.T, path string) int {
	t.Helper()
	probeOnce.Do(func() {
		ctx := context.Background()
		dir, err := os.MkdirTemp("", "gwprobe")
		if err != nil {
			probeErr = err
			return
		}
		cfg := config.Default()
		cfg.LiveDatabaseURL = "sqlite:" + filepath.Join(dir, "live.db")
		cfg.TestDatabaseURL = "sqlite:" + filepath.Join(dir, "sandbox.db")
		if _, probeErr = gendata.SetUpSmall(ctx, cfg.LiveDatabaseURL, cfg.TestDatabaseURL, 1); probeErr != nil {
			return
		}
		mr, err := miniredis.Run()
		if err != nil {
			probeErr = err
			return
		}
		// Kept for the whole test binary: it is shared by the tests below.
		d, err := connectWith(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)),
			redis.NewClient(&redis.Options{Addr: mr.Addr(), ContextTimeoutEnabled: true}))
		if err != nil {
			probeErr = err
			return
		}
		probeDeps, probeHandler = d, d.server.Handler()
	})
	if probeErr != nil {
		t.Fatalf("real handler: %v", probeErr)
	}
	rec := httptest.NewRecorder()
	probeHandler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec.Code
}

// TestProbePathsAreServed keeps servedStatus honest: health paths answer
// 200, a misspelt one does not.
func TestProbePathsAreServed(t *testing.T) {
	for path, want := range map[string]int{"/healthz": 200, "/readyz": 200, "/ready": 404, "/health": 404} {
		if got := servedStatus(t, path); got != want {
			t.Errorf("GET %s = %d, want %d", path, got, want)
		}
	}
}

func TestProbeCommand(t *testing.T) {
	status := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(status) }))
	defer srv.Close()
	probe := func(args ...string) int {
		return run(context.Background(), append([]string{"probe"}, args...), io.Discard, io.Discard, envOf(nil))
	}
	if code := probe(srv.URL + "/readyz"); code != 0 {
		t.Fatalf("probe of a 200: exit %d", code)
	}
	status = http.StatusServiceUnavailable
	if code := probe(srv.URL + "/readyz"); code != 1 {
		t.Fatalf("probe of a 503: exit %d, want 1", code)
	}
	if code := probe("/readyz"); code != 2 {
		t.Fatalf("probe without a host: exit %d, want 2", code)
	}
}

// TestDockerfile checks the image against the binary: the configuration
// file lands where `serve` looks for it, the exposed ports are the
// configured listeners', and it runs `serve` as a non-root user.
func TestDockerfile(t *testing.T) {
	b, err := os.ReadFile(repoRoot + "/deploy/Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	var final []string // instructions of the last stage
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "FROM ") {
			final = nil
		}
		if line != "" && !strings.HasPrefix(line, "#") {
			final = append(final, line)
		}
	}
	has := func(want string) bool {
		for _, l := range final {
			if l == want {
				return true
			}
		}
		return false
	}
	cfg := config.Default()
	for _, want := range []string{
		"COPY configs/gateway.yaml /" + config.File,
		"WORKDIR /",
		"USER nonroot:nonroot",
		fmt.Sprintf("EXPOSE %d %d", portOf(t, cfg.Addr), portOf(t, cfg.AdminAddr)),
		`ENTRYPOINT ["/gateway", "serve"]`,
	} {
		if !has(want) {
			t.Errorf("the final stage lacks %q", want)
		}
	}
	if !strings.Contains(string(b), "CGO_ENABLED=0") || !strings.Contains(final[0], "distroless/static") {
		t.Errorf("the image is not a static binary on distroless/static")
	}
}
