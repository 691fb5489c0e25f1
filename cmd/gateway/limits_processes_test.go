package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/invoicing-ao/gateway/backend/gendata"
	"github.com/invoicing-ao/gateway/internal/testenv"
)

// gateways are three `gateway serve` processes behind an imaginary load
// balancer, on one redis-server of the test's own (its command counts are
// theirs alone), serving DemoCompanyB with one LIVE key.
type gateways struct {
	procs []*process
	key   string
	redis *redis.Client
	cli   func(args ...string)
}

func startGateways(t *testing.T) *gateways {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	live, sandbox := "sqlite:"+filepath.Join(dir, "live.db"), "sqlite:"+filepath.Join(dir, "sandbox.db")
	if _, err := gendata.SetUpSmall(ctx, live, sandbox, 5); err != nil {
		t.Fatal(err)
	}
	srv := testenv.StartRedisServer(t, 0)
	g := &gateways{redis: redis.NewClient(&redis.Options{Addr: srv.Addr()})}
	t.Cleanup(func() { _ = g.redis.Close() })
	env := []string{
		"GATEWAY_ADDR=127.0.0.1:0", "GATEWAY_ADMIN_ADDR=127.0.0.1:0", "GATEWAY_ADMIN_TOKEN=" + testAdminToken,
		"GATEWAY_REDIS_URL=redis://" + srv.Addr() + "/0",
		"GATEWAY_LIVE_DATABASE_URL=" + live, "GATEWAY_TEST_DATABASE_URL=" + sandbox,
		"GATEWAY_HISTORY_DATABASE_URL=" + testenv.Postgres(t),
		"GATEWAY_LOG_LEVEL=info", "GATEWAY_INFLIGHT_PER_COMPANY=64", "GATEWAY_INFLIGHT_TOTAL=64",
	}
	bin := buildBinary(t)
	for range 3 {
		g.procs = append(g.procs, startProcess(t, bin, env))
	}
	g.key = createKeyViaAdmin(t, g.procs[0].admin, gendata.DemoCompanyB)
	g.cli = func(args ...string) {
		cmd := exec.Command(bin, append(args, "--config", "../../configs/gateway.yaml")...)
		cmd.Env = append(os.Environ(), withSecretsKey(env)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
	}
	return g
}

// setLimit sets DemoCompanyB's LIVE limit with the CLI, then waits until its
// bucket is full again and the instances counted for it have aged out, so
// that a measure starts at burst + rate × time: until Redis has expired both
// keys (the bucket's when it is full, the instances' two instance windows
// after the last refresh, past every lease's TTL).
func (g *gateways) setLimit(t *testing.T, lim [2]int) {
	t.Helper()
	g.cli("limits", "set", "--company", gendata.DemoCompanyB, "--mode", "LIVE",
		"--rps", strconv.Itoa(lim[0]), "--burst", strconv.Itoa(lim[1]))
	testenv.Eventually(t, "a full bucket and no instance counted", func() error {
		var left []string
		for _, k := range []string{"tat", "instances"} {
			keys, err := g.redis.Keys(context.Background(), "*{"+gendata.DemoCompanyB+"}:"+k+":live").Result()
			if err != nil {
				t.Fatal(err)
			}
			left = append(left, keys...)
		}
		return testenv.Want(len(left), 0, fmt.Sprintf("keys left %v", left))
	})
}

// probePath is admitted or refused by the rate limit, then answered 400 (an
// unknown parameter) without touching the database: what it measures is the
// limiter, not SQLite.
const probePath = "/api/v1/v1/clients?limiter-probe=1"

type shot struct {
	at     time.Time // sent
	status int
	policy string // RateLimit-Policy
}

// flood sends probes from workers per process, together at about rate per
// second (as fast as the answers come if the machine cannot keep up), for
// d; it returns every answer and the time from the first send to the last
// answer. A paced load leaves the machine the time to answer: an overloaded
// one delays Redis past the limiter's timeout, and the processes then
// rightly decide alone (the fallback), which is not what is measured here.
func (g *gateways) flood(t *testing.T, workers int, rate float64, d time.Duration) ([]shot, time.Duration) {
	t.Helper()
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: workers}}
	defer client.CloseIdleConnections()
	var (
		mu    sync.Mutex
		shots []shot
		wg    sync.WaitGroup
	)
	every := time.Duration(float64(workers*len(g.procs)) / rate * float64(time.Second))
	start := time.Now()
	stop := start.Add(d)
	for _, p := range g.procs {
		for w := range workers {
			wg.Go(func() {
				var mine []shot
				next := start.Add(every * time.Duration(w) / time.Duration(workers))
				for now := time.Now(); now.Before(stop); now = time.Now() {
					if wait := next.Sub(now); wait > 0 {
						time.Sleep(wait)
						now = time.Now()
					}
					next = next.Add(every)
					mine = append(mine, g.shoot(t, client, p.pub, now))
				}
				mu.Lock()
				shots = append(shots, mine...)
				mu.Unlock()
			})
		}
	}
	wg.Wait()
	return shots, time.Since(start)
}

// fallbacks is the rate-limit decisions each process made alone so far
// (Redis unreachable, or slower than the limiter's timeout), by process.
func (g *gateways) fallbacks(t *testing.T) []float64 {
	t.Helper()
	var n []float64
	for _, p := range g.procs {
		mfs := scrape(t, p.admin)
		var sum float64
		for _, d := range []string{"allowed", "rejected"} {
			v, _ := value(mfs, "gateway_ratelimit_decisions_total", map[string]string{"mode": "LIVE", "decision": d, "source": "local"})
			sum += v
		}
		n = append(n, sum)
	}
	return n
}

func (g *gateways) shoot(t *testing.T, client *http.Client, base string, now time.Time) shot {
	req, _ := http.NewRequest("GET", base+probePath, nil)
	req.Header.Set("Authorization", "Bearer "+g.key)
	req.Header.Set("X-Company-Id", gendata.DemoCompanyB)
	res, err := client.Do(req)
	if err != nil {
		t.Errorf("probe: %v", err)
		return shot{at: now}
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return shot{at: now, status: res.StatusCode, policy: res.Header.Get("RateLimit-Policy")}
}

// count returns the admitted (400: past the limit, refused by the handler)
// and refused (429) probes sent in [from, to).
func count(t *testing.T, shots []shot, from, to time.Time) (admitted, refused int) {
	t.Helper()
	for _, s := range shots {
		if s.at.Before(from) || !s.at.Before(to) {
			continue
		}
		switch s.status {
		case http.StatusBadRequest:
			admitted++
		case http.StatusTooManyRequests:
			refused++
		default:
			t.Errorf("probe answered %d, want 400 (admitted) or 429", s.status)
		}
	}
	return admitted, refused
}

// scriptCalls is the rate-limit script calls Redis has run so far.
func (g *gateways) scriptCalls(t *testing.T) int64 {
	t.Helper()
	info, err := g.redis.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, line := range strings.Split(info, "\r\n") {
		for _, cmd := range []string{"cmdstat_evalsha:calls=", "cmdstat_eval:calls="} {
			if rest, ok := strings.CutPrefix(line, cmd); ok {
				v, _ := strconv.ParseInt(rest[:strings.IndexByte(rest, ',')], 10, 64)
				n += v
			}
		}
	}
	return n
}

// Three processes on one Redis, with checks that hold whatever the machine's
// speed: a low limit admits its burst and never more than burst + refill +
// one per instance; a leased one never more than the bucket gives (burst +
// rate × the time the load took); and a limit changed with the CLI is what
// every process then applies. The ±5 % figures over 10 s need real
// load: TestThreeProcessesAccuracy.
func TestThreeProcessesShareOneLimit(t *testing.T) {
	t.Parallel()
	g := startGateways(t)

	g.setLimit(t, [2]int{1, 5})
	shots, took := g.flood(t, 3, 300, 300*time.Millisecond)
	admitted, refused := count(t, shots, shots[0].at.Add(-time.Hour), time.Now())
	most := (5+int(math.Floor(took.Seconds()*1)))*g.bound(t) + 3
	t.Logf("1/s burst 5: %d admitted, %d refused in %v; want 5 to %d", admitted, refused, took, most)
	if admitted < 5 || admitted > most {
		t.Errorf("1/s burst 5: %d admitted in %v, want 5 to %d", admitted, took, most)
	}

	g.setLimit(t, [2]int{100, 20})
	shots, took = g.flood(t, 3, 400, 2*time.Second)
	admitted, refused = count(t, shots, shots[0].at.Add(-time.Hour), time.Now())
	most = int(20+100*took.Seconds()) * g.bound(t)
	t.Logf("100/s burst 20: %d admitted, %d refused in %v; the bucket gave at most %d", admitted, refused, took, most)
	if admitted > most {
		t.Errorf("100/s burst 20: %d admitted in %v, more than the bucket gives (%d)", admitted, took, most)
	}

	g.cli("limits", "set", "--company", gendata.DemoCompanyB, "--mode", "LIVE", "--rps", "40", "--burst", "5")
	client := &http.Client{Timeout: 10 * time.Second}
	for i, p := range g.procs {
		testenv.Eventually(t, fmt.Sprintf("process %d to apply the changed limit", i), func() error {
			return testenv.Want(g.shoot(t, client, p.pub, time.Now()).policy, `"live";q=5;w=1`, "RateLimit-Policy")
		})
	}
}

// bound is how many times the limit the processes may have admitted
// together so far: once, unless some decided alone for a while (Redis slower
// than the limiter's timeout on a busy machine), each of which may then
// admit the limit on its own (the documented fallback).
func (g *gateways) bound(t *testing.T) int {
	n := 1
	for i, f := range g.fallbacks(t) {
		if f > 0 {
			t.Logf("process %d decided %.0f times alone (Redis too slow): its own limit adds to the bound", i, f)
			n++
		}
	}
	return n
}

func sum(xs []float64) (s float64) {
	for _, x := range xs {
		s += x
	}
	return s
}

// TestThreeProcessesAccuracy measures the rate limits' accuracy targets
// (docs/performance.md) across three `gateway serve` processes on one Redis,
// with real load over 10 s windows; it needs a machine that can offer more
// than 5,000 requests/s, so it runs only when asked:
//
//	GATEWAY_ACCURACY=1 go test -run TestThreeProcessesAccuracy -v ./cmd/gateway/
//
// Not parallel: it measures, and runs before the parallel tests start.
func TestThreeProcessesAccuracy(t *testing.T) {
	if os.Getenv("GATEWAY_ACCURACY") != "1" {
		t.Skip("set GATEWAY_ACCURACY=1 to measure (10 s windows under real load)")
	}
	g := startGateways(t)
	window := 10 * time.Second
	for _, c := range []struct {
		rate, burst, workers int
		offered              float64
		within               float64 // relative error allowed
	}{
		{100, 20, 3, 300, 0.05},
		{5000, 500, 16, 10_000, 0.05},
		{1, 5, 3, 60, -1}, // at most burst + refill + one per instance
	} {
		g.setLimit(t, [2]int{c.rate, c.burst})
		calls, alone := g.scriptCalls(t), sum(g.fallbacks(t))
		shots, took := g.flood(t, c.workers, c.offered, window)
		calls, alone = g.scriptCalls(t)-calls, sum(g.fallbacks(t))-alone
		start := shots[0].at
		for _, s := range shots {
			if s.at.Before(start) {
				start = s.at
			}
		}
		admitted, refused := count(t, shots, start, start.Add(window))
		want := float64(c.burst) + float64(c.rate)*window.Seconds()
		perAdmitted := float64(calls) / float64(admitted)
		t.Logf("%d/s burst %d: %d admitted (want %.0f, %+.2f %%), %d refused, %.0f requests/s offered, %d script calls (%.4f per admitted), %.0f decisions alone (fallback) in %v",
			c.rate, c.burst, admitted, want, 100*(float64(admitted)-want)/want, refused, float64(len(shots))/took.Seconds(), calls, perAdmitted, alone, took)
		switch {
		case alone > 0:
			t.Errorf("%d/s burst %d: %.0f decisions made alone: Redis answered slower than the limiter's timeout (an overloaded machine); the figures measure the fallback", c.rate, c.burst, alone)
		case c.within < 0:
			if admitted > int(want)+len(g.procs) {
				t.Errorf("%d/s burst %d: %d admitted, more than %.0f + one per instance", c.rate, c.burst, admitted, want)
			}
		case refused == 0:
			t.Errorf("%d/s burst %d: nothing refused: the load never reached the limit", c.rate, c.burst)
		case math.Abs(float64(admitted)-want) > c.within*want:
			t.Errorf("%d/s burst %d: %d admitted, want %.0f ± %.0f %%", c.rate, c.burst, admitted, want, 100*c.within)
		}
		if c.rate > 1000 && perAdmitted > 0.05 {
			t.Errorf("%d/s: %.4f script calls per admitted request, want at most 0.05", c.rate, perAdmitted)
		}
	}
}
