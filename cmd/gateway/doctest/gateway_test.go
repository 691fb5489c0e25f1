package doctest

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/internal/seal"
	"github.com/invoicing-ao/gateway/internal/testenv"
)

// The gateway these checks hold the documents and deploy files to is the
// binary itself, built once from cmd/gateway, and one `gateway demo` of it:
// its command lines, its health paths and its /metrics, never copies of
// them that could drift.

const (
	repoRoot   = "../../.."
	shippedCfg = repoRoot + "/configs/gateway.yaml"
	// testAdminToken is a strong admin token (`openssl rand -hex 24`), as a
	// deployment's secret must be.
	testAdminToken = "9f4c2a7e1b8d3c6f0a5e9b2d7c4f1a8e6b3d0c9f2a7e5b1d"
)

// testSecretsKey is an age identity, as a deployment's webhook secrets key
// must be.
var testSecretsKey = func() string {
	id, _, err := seal.Generate()
	if err != nil {
		panic(err)
	}
	return id
}()

// envOf is an environment of m's variables, and only those.
func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestMain(m *testing.M) {
	code := m.Run()
	demoRun.stop()
	os.Exit(code)
}

var binary struct {
	once sync.Once
	path string
	err  error
}

// gatewayBinary is cmd/gateway, built once for this package's tests beside
// the test binary (go test removes that directory after the run).
func gatewayBinary(t *testing.T) string {
	t.Helper()
	binary.once.Do(func() {
		exe, err := os.Executable()
		if err != nil {
			binary.err = err
			return
		}
		binary.path = filepath.Join(filepath.Dir(exe), "gateway")
		if out, err := exec.Command("go", "build", "-o", binary.path, "..").CombinedOutput(); err != nil {
			binary.err = fmt.Errorf("go build ./cmd/gateway: %v\n%s", err, out)
		}
	})
	if binary.err != nil {
		t.Fatal(binary.err)
	}
	return binary.path
}

// withoutGatewayVars drops GATEWAY_* settings of the test's environment:
// what the binary runs with is the test's choice alone.
func withoutGatewayVars(env []string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, "GATEWAY_") {
			out = append(out, kv)
		}
	}
	return out
}

// runGateway runs the binary with args and the environment env adds to the
// test's (without its GATEWAY_* settings), and returns its exit code and
// outputs.
func runGateway(t *testing.T, env []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(gatewayBinary(t), args...)
	cmd.Env = append(withoutGatewayVars(os.Environ()), env...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatalf("gateway %s: %v", strings.Join(args, " "), err)
	}
	return code, out.String(), errb.String()
}

// demo is `gateway demo` on free ports, run once for the package's tests:
// the binary's own wiring on an in-process Redis and SQLite demo data.
type demo struct {
	once    sync.Once
	err     error
	cmd     *exec.Cmd
	exited  chan struct{}
	dir     string
	out     testenv.SyncBuffer
	errs    testenv.SyncBuffer
	base    string // the public listener, http://host:port
	admin   string // the admin listener, http://host:port
	key     string // company A's full-access LIVE key
	company string // company A
	called  sync.Once
}

var demoRun demo

// runningDemo starts the demo on the first call and returns it, ready.
func runningDemo(t *testing.T) *demo {
	t.Helper()
	bin := gatewayBinary(t)
	demoRun.once.Do(func() { demoRun.err = demoRun.start(bin) })
	if demoRun.err != nil {
		t.Fatalf("gateway demo: %v", demoRun.err)
	}
	return &demoRun
}

func (d *demo) start(bin string) error {
	var err error
	if d.dir, err = os.MkdirTemp("", "doctest-demo-"); err != nil {
		return err
	}
	d.cmd = exec.Command(bin, "demo", "--data", d.dir)
	d.cmd.Env = append(withoutGatewayVars(os.Environ()), "GATEWAY_ADDR=127.0.0.1:0", "GATEWAY_ADMIN_ADDR=127.0.0.1:0")
	d.cmd.Stdout, d.cmd.Stderr = &d.out, &d.errs
	if err := d.cmd.Start(); err != nil {
		return err
	}
	d.exited = make(chan struct{})
	go func() { _ = d.cmd.Wait(); close(d.exited) }()
	deadline := time.After(2 * time.Minute)
	for !strings.Contains(d.out.String(), "Press Ctrl+C") {
		select {
		case <-d.exited:
			return fmt.Errorf("exited: %s\n%s", d.out.String(), d.errs.String())
		case <-deadline:
			return fmt.Errorf("not ready after 2 minutes: %s\n%s", d.out.String(), d.errs.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	printed := d.out.String()
	m := regexp.MustCompile(`ready on (http://\S+) \(admin API on (\S+), token \w+\)`).FindStringSubmatch(printed)
	k := regexp.MustCompile(`LIVE full access\s+company A\s+(igw_live_\S+)`).FindStringSubmatch(printed)
	c := regexp.MustCompile(`Companies: A (\S+)`).FindStringSubmatch(printed)
	if m == nil || k == nil || c == nil {
		return fmt.Errorf("cannot read its addresses, key and company:\n%s", printed)
	}
	d.base, d.admin, d.key, d.company = m[1], "http://"+m[2], k[1], c[1]
	return nil
}

// stop interrupts the demo, as Ctrl+C does, and removes its data.
func (d *demo) stop() {
	if d.cmd == nil || d.cmd.Process == nil {
		return
	}
	_ = d.cmd.Process.Signal(os.Interrupt)
	select {
	case <-d.exited:
	case <-time.After(30 * time.Second):
		_ = d.cmd.Process.Kill()
		<-d.exited
	}
	_ = os.RemoveAll(d.dir)
}

// get is the status and body of a GET of url, with the header's key and
// value pairs.
func get(t *testing.T, url string, header ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, string(b)
}

// scrape is a GET of path (/metrics) on the demo's admin listener, after
// API requests (one with its key, one without) so that the per-request
// families exist.
func (d *demo) scrape(t *testing.T, path string) (int, string) {
	t.Helper()
	d.called.Do(func() {
		for _, key := range []string{d.key, ""} {
			get(t, d.base+"/api/v1/v1/clients", "Authorization", "Bearer "+key, "X-Company-Id", d.company)
		}
	})
	return get(t, d.admin+path)
}

// servedStatus is the status the demo's public listener gives a GET of
// path: health paths need no key.
func servedStatus(t *testing.T, path string) int {
	t.Helper()
	code, _ := get(t, runningDemo(t).base+path)
	return code
}

// TestProbePathsAreServed keeps servedStatus honest: health paths answer
// 200, a misspelt one does not.
func TestProbePathsAreServed(t *testing.T) {
	t.Parallel()
	for path, want := range map[string]int{"/healthz": 200, "/readyz": 200, "/ready": 404, "/health": 404} {
		if got := servedStatus(t, path); got != want {
			t.Errorf("GET %s = %d, want %d", path, got, want)
		}
	}
}
