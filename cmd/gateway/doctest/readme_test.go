package doctest

import (
	"context"
	"encoding/json"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/invoicing-ao/gateway/backend/gendata"
	"github.com/invoicing-ao/gateway/internal/testenv"
)

// readmeMarker precedes the README's block of real-services commands.
const readmeMarker = "<!-- cmd/gateway/doctest/readme_test.go runs the block below as written -->"

// readmeBlock is the shell block after the marker in README.md.
func readmeBlock(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(b), readmeMarker+"\n```sh\n")
	block, _, closed := strings.Cut(after, "\n```\n")
	if !ok || !closed || strings.TrimSpace(block) == "" {
		t.Fatalf("README.md has no ```sh block after %q", readmeMarker)
	}
	return block
}

// The README's steps against real services work as written on this
// machine: build and install the binary, create the three databases, load
// the schema and the data, create a key, serve, call. The commands are read
// from README.md, so the two cannot drift. What is changed is only what
// would collide with other users of the shared services and machine: the
// database names (in the commands and in a copy of configs/gateway.yaml,
// given by GATEWAY_CONFIG), the listeners' ports, a Redis key prefix of the
// test's own, no drain delay at the end, and a GOPATH of the test's own for
// `go install`.
func TestReadmeRealServicesPath(t *testing.T) {
	t.Parallel()
	admin := testenv.PostgresAdminURL()
	if u, err := url.Parse(admin); err != nil || (u.Hostname() != "127.0.0.1" && u.Hostname() != "localhost") {
		t.Skipf("the README's steps use the local PostgreSQL; the tests' is %s", admin)
	}
	if _, err := os.Stat("/var/run/postgresql"); err != nil {
		testenv.Unavailable(t, "the local PostgreSQL's socket directory", err)
	}
	for _, tool := range []string{"createdb", "curl", "bash"} {
		if _, err := exec.LookPath(tool); err != nil {
			testenv.Unavailable(t, tool, err)
		}
	}
	_, prefix := testenv.Redis(t)
	liveDB, sandboxDB, gatewayDB := testenv.Name("gwtest_readme_live_"), testenv.Name("gwtest_readme_sandbox_"), testenv.Name("gwtest_readme_gateway_")
	t.Cleanup(func() { dropDatabases(t, admin, liveDB, sandboxDB, gatewayDB) })
	port, adminPort := testenv.ClosedPort(t), testenv.ClosedPort(t)

	rename := strings.NewReplacer("invoicing_live", liveDB, "invoicing_sandbox", sandboxDB, "gateway_history", gatewayDB, "127.0.0.1:8080", "127.0.0.1:"+port)
	script := rename.Replace(readmeBlock(t))
	shipped, err := os.ReadFile(shippedCfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg := rename.Replace(string(shipped))
	for pattern, repl := range map[string]string{
		`(?m)^addr: .*$`: `addr: "127.0.0.1:` + port + `"`, `(?m)^adminAddr: .*$`: `adminAddr: "127.0.0.1:` + adminPort + `"`,
		`(?m)^redisPrefix: .*$`: `redisPrefix: "` + prefix + `"`, `(?m)^drainDelay: .*$`: `drainDelay: 0s`,
	} {
		re := regexp.MustCompile(pattern)
		if !re.MatchString(cfg) {
			t.Fatalf("configs/gateway.yaml has no line %s", pattern)
		}
		cfg = re.ReplaceAllString(cfg, repl)
	}
	cfgFile := filepath.Join(t.TempDir(), "gateway.yaml")
	if err := os.WriteFile(cfgFile, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}

	modcache, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", "set -euo pipefail\ntrap 'kill $(jobs -p) 2>/dev/null || true' EXIT\n"+script)
	cmd.Dir, _ = filepath.Abs(repoRoot)
	cmd.Env = append(withoutGatewayVars(os.Environ()), "GOPATH="+t.TempDir(), "GOMODCACHE="+strings.TrimSpace(string(modcache)),
		"GOTOOLCHAIN=local", "GATEWAY_CONFIG="+cfgFile)
	var stderr testenv.SyncBuffer
	cmd.Stderr = &stderr
	cmd.WaitDelay = 30 * time.Second
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the README's steps failed: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr.String())
	}
	printed := string(out)
	for _, want := range []string{"Companies (the same ids in both databases):", gendata.DemoCompanyA, gendata.DemoCompanySuspended,
		"gateway keys create --company " + gendata.DemoCompanyA} {
		if !strings.Contains(printed, want) {
			t.Errorf("data load did not print %q:\n%s", want, printed)
		}
	}
	lines := strings.Split(strings.TrimSpace(printed), "\n")
	var page struct{ Data []map[string]any }
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &page); err != nil || len(page.Data) != 2 {
		t.Errorf("the call did not answer two invoices (%v):\n%s\nstderr:\n%s", err, printed, stderr.String())
	}
}

func dropDatabases(t *testing.T, admin string, names ...string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Logf("drop %v: %v", names, err)
		return
	}
	defer c.Close(ctx)
	for _, n := range names {
		if _, err := c.Exec(ctx, "DROP DATABASE IF EXISTS "+n+" WITH (FORCE)"); err != nil {
			t.Logf("drop %s: %v", n, err)
		}
	}
}

// The README's demo says how to get the `gateway` binary its other
// commands use; those lines are the first of the real-services block,
// which TestReadmeRealServicesPath runs as written (a new terminal included:
// its PATH holds only what the block exports).
func TestReadmeDemoInstallsTheBinary(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, demo, _ := strings.Cut(string(b), "\n## Two commands\n")
	demo, _, _ = strings.Cut(demo, "\n## ")
	var install []string
	for _, line := range strings.Split(demo, "\n") {
		if cmd, ok := strings.CutPrefix(line, "    "); ok && !strings.HasPrefix(cmd, "go run ") && strings.Contains(cmd, "go ") {
			install = append(install, cmd)
		}
	}
	if len(install) != 2 || !strings.HasPrefix(install[0], "go install ./cmd/gateway") || !strings.Contains(install[1], "PATH=") {
		t.Fatalf("the demo's section does not say how to install gateway and find it: %q", install)
	}
	tested := strings.Split(readmeBlock(t), "\n")
	for i, line := range install {
		if cmd, _, _ := strings.Cut(tested[i], "  #"); strings.TrimSpace(cmd) != line {
			t.Errorf("the demo's line %q is not line %d of the tested block (%q)", line, i+1, tested[i])
		}
	}
}
