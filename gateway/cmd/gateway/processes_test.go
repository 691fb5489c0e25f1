package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/backend/gendata"
	"github.com/invoicing-ao/gateway/internal/testenv"
)

// process is one `gateway serve` child process.
type process struct {
	cmd         *exec.Cmd
	pub, admin  string // base URLs
	stderrLines chan string
	seen        []string // the lines waitLog has read
}

// buildBinary compiles the gateway once per test.
func buildBinary(t *testing.T) string {
	t.Helper()
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
	cmd := exec.Command(bin, "serve", "--config", "../../../configs/gateway.yaml")
	cmd.Env = append(os.Environ(), env...)
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
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil && m["msg"] == "gateway listening" {
				ready <- m
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

// TestThreeProcessesShareOneLimit runs three gateway processes behind an
// imaginary load balancer against one Redis: together they admit what one
// would, within 5% over a 10-second window at the limit, and a limit changed
// with the CLI under load is enforced by all of them within a second.
func TestThreeProcessesShareOneLimit(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	live, sandbox := "sqlite:"+filepath.Join(dir, "live.db"), "sqlite:"+filepath.Join(dir, "sandbox.db")
	if _, err := gendata.SetUpSmall(ctx, live, sandbox, 5); err != nil {
		t.Fatal(err)
	}
	_, prefix := testenv.Redis(t)
	env := []string{
		"GATEWAY_ADDR=127.0.0.1:0", "GATEWAY_ADMIN_ADDR=127.0.0.1:0", "GATEWAY_ADMIN_TOKEN=tok",
		"GATEWAY_REDIS_URL=" + testenv.RedisURL(), "GATEWAY_REDIS_PREFIX=" + prefix,
		"GATEWAY_LIVE_DATABASE_URL=" + live, "GATEWAY_TEST_DATABASE_URL=" + sandbox,
		"GATEWAY_LOG_LEVEL=info", "GATEWAY_INFLIGHT_PER_COMPANY=64", "GATEWAY_INFLIGHT_TOTAL=64",
	}
	bin := buildBinary(t)
	var procs []*process
	for i := 0; i < 3; i++ {
		procs = append(procs, startProcess(t, bin, env))
	}
	key := createKeyViaAdmin(t, procs[0].admin, gendata.DemoCompanyB)
	cli := func(args ...string) {
		cmd := exec.Command(bin, append(args, "--config", "../../../configs/gateway.yaml")...)
		cmd.Env = append(os.Environ(), env...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
	}
	cli("limits", "set", "--company", gendata.DemoCompanyB, "--mode", "LIVE", "--rps", "100", "--burst", "20")

	// Offer about 450 requests/s, spread over the three processes.
	type event struct {
		at     time.Time
		status int
	}
	var mu sync.Mutex
	var events []event
	stop := make(chan struct{})
	var wg sync.WaitGroup
	client := &http.Client{Timeout: 5 * time.Second}
	for _, p := range procs {
		for w := 0; w < 3; w++ {
			wg.Add(1)
			go func(base string) {
				defer wg.Done()
				tick := time.NewTicker(20 * time.Millisecond)
				defer tick.Stop()
				for {
					select {
					case <-stop:
						return
					case <-tick.C:
					}
					req, _ := http.NewRequest("GET", base+"/api/v1/v1/clients?pageSize=1", nil)
					req.Header.Set("Authorization", "Bearer "+key)
					req.Header.Set("X-Company-Id", gendata.DemoCompanyB)
					res, err := client.Do(req)
					if err != nil {
						continue
					}
					_, _ = io.Copy(io.Discard, res.Body)
					res.Body.Close()
					mu.Lock()
					events = append(events, event{time.Now(), res.StatusCode})
					mu.Unlock()
				}
			}(p.pub)
		}
	}
	count := func(from, to time.Time) (ok, limited, other int) {
		mu.Lock()
		defer mu.Unlock()
		for _, e := range events {
			if e.at.Before(from) || !e.at.Before(to) {
				continue
			}
			switch e.status {
			case 200:
				ok++
			case 429:
				limited++
			default:
				other++
			}
		}
		return
	}
	start := time.Now()
	time.Sleep(10 * time.Second)
	window := time.Now()
	cli("limits", "set", "--company", gendata.DemoCompanyB, "--mode", "LIVE", "--rps", "40", "--burst", "5")
	changed := time.Now()
	time.Sleep(4 * time.Second)
	close(stop)
	wg.Wait()

	// The burst was full at the start: rate × window + burst.
	ok, limited, other := count(start, window)
	elapsed := window.Sub(start).Seconds()
	want := 100*elapsed + 20
	t.Logf("10 s window: %d admitted (want %.0f ±5%%), %d limited, %d other", ok, want, limited, other)
	if other != 0 {
		t.Errorf("%d answers were neither 200 nor 429", other)
	}
	if limited == 0 {
		t.Fatal("the offered load never reached the limit; the test measures nothing")
	}
	if float64(ok) < want*0.95 || float64(ok) > want*1.05 {
		t.Errorf("admitted %d in %.1fs, want %.0f ±5%%", ok, elapsed, want)
	}
	// From one second after the change on, every process applies the new limit.
	from := changed.Add(time.Second)
	ok2, _, _ := count(from, changed.Add(4*time.Second))
	want2 := 40 * 3.0
	t.Logf("after the change: %d admitted in 3 s (want %.0f ±5%%)", ok2, want2)
	if float64(ok2) < want2*0.95-1 || float64(ok2) > want2*1.05+1 {
		t.Errorf("after the limit change: admitted %d in 3 s, want %.0f ±5%%", ok2, want2)
	}
}

func createKeyViaAdmin(t *testing.T, admin, company string) string {
	t.Helper()
	body := fmt.Sprintf(`{"companyId":%q,"mode":"LIVE","scopes":["clients:read"],"name":"load"}`, company)
	req, _ := http.NewRequest("POST", admin+"/admin/v1/keys", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer tok")
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
