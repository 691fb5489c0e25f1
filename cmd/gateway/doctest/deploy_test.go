package doctest

// Offline checks of deploy/: no container engine or cluster runs here, so the
// manifests are rendered and compared with what the gateway really reads
// (config.Config's env tags, config.Load) and serves (the demo of the built
// binary), rather than copies of them.

import (
	"fmt"
	"net"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/invoicing-ao/gateway/cmd/gateway/internal/config"
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

// TestDockerfile checks the image against the binary: the configuration
// file lands where `serve` looks for it, the exposed ports are the
// configured listeners', and it runs `serve` as a non-root user.
func TestDockerfile(t *testing.T) {
	t.Parallel()
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
