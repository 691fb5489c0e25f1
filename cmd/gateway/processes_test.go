package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// process is one `gateway serve` child process.
type process struct {
	cmd         *exec.Cmd
	pub, admin  string // base URLs
	stderrLines chan string
	seen        []string // the lines waitLog has read
}

var builtBin struct {
	once sync.Once
	path string
	err  error
}

// buildBinary is the gateway binary, built once for all the tests that run
// it, beside the test binary (go test removes that directory after the
// run), or in the test's own directory when that one cannot be written.
func buildBinary(t *testing.T) string {
	t.Helper()
	builtBin.once.Do(func() {
		exe, err := os.Executable()
		if err != nil {
			builtBin.err = err
			return
		}
		builtBin.path = filepath.Join(filepath.Dir(exe), "gateway-under-test")
		builtBin.err = exec.Command("go", "build", "-o", builtBin.path, ".").Run()
	})
	if builtBin.err == nil {
		return builtBin.path
	}
	bin := filepath.Join(t.TempDir(), "gateway")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// startProcess runs `gateway serve` with env and waits for its listening line.
func startProcess(t *testing.T, bin string, env []string) *process {
	t.Helper()
	cmd := exec.Command(bin, "serve", "--config", "../../configs/gateway.yaml")
	cmd.Env = append(os.Environ(), withSecretsKey(env)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &process{cmd: cmd, stderrLines: make(chan string, 1024)}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
		}
	})
	ready := make(chan map[string]any, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		found := false
		for sc.Scan() {
			var m map[string]any
			if !found && json.Unmarshal(sc.Bytes(), &m) == nil && m["msg"] == "gateway listening" {
				ready <- m
				found = true
			}
			select {
			case p.stderrLines <- sc.Text():
			default:
			}
		}
	}()
	select {
	case m := <-ready:
		p.pub, p.admin = "http://"+m["public"].(string), "http://"+m["admin"].(string)
	case <-time.After(30 * time.Second):
		t.Fatal("gateway process did not start")
	}
	return p
}

func createKeyViaAdmin(t *testing.T, admin, company string) string {
	t.Helper()
	body := fmt.Sprintf(`{"companyId":%q,"mode":"LIVE","scopes":["clients:read"],"name":"load"}`, company)
	req, _ := http.NewRequest("POST", admin+"/admin/v1/keys", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+testAdminToken)
	req.Header.Set("X-Actor", "processes-test")
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var v struct{ Key string }
	if err := json.NewDecoder(res.Body).Decode(&v); err != nil || res.StatusCode != 201 {
		t.Fatalf("create key: %d %v", res.StatusCode, err)
	}
	return v.Key
}

// withSecretsKey is env with the tests' webhook secrets key (testSecretsKey)
// unless env sets one: a gateway process needs one to start.
func withSecretsKey(env []string) []string {
	for _, e := range env {
		if strings.HasPrefix(e, "GATEWAY_WEBHOOK_SECRETS_") {
			return env
		}
	}
	return append([]string{"GATEWAY_WEBHOOK_SECRETS_KEY=" + testSecretsKey}, env...)
}
