package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/invoicing-ao/gateway/backend/gendata"
)

// burst sends n requests at once with the key and returns the statuses by
// count and the problem codes of the refusals.
func burst(t testing.TB, url, key string, n int) (map[int]int, map[string]int) {
	t.Helper()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n}, Timeout: time.Minute}
	defer client.CloseIdleConnections()
	statuses, codes := map[int]int{}, map[string]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := make(chan struct{})
	code := regexp.MustCompile(`"code":"([a-z_]+)"`)
	for range n {
		wg.Go(func() {
			<-start
			req, _ := http.NewRequest(http.MethodGet, url, nil)
			req.Header.Set("Authorization", "Bearer "+key)
			req.Header.Set("X-Company-Id", gendata.DemoCompanyA)
			res, err := client.Do(req)
			st, c := 0, ""
			if err == nil {
				b, _ := io.ReadAll(res.Body)
				res.Body.Close()
				st = res.StatusCode
				if m := code.FindSubmatch(b); m != nil {
					c = string(m[1])
				}
			}
			mu.Lock()
			statuses[st]++
			if c != "" {
				codes[c]++
			}
			mu.Unlock()
		})
	}
	close(start)
	wg.Wait()
	return statuses, codes
}

// decisions reads the rate-limit decisions by source from an admin
// listener's /metrics.
func decisions(t testing.TB, admin string) map[string]int {
	t.Helper()
	res, err := http.Get(admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	out := map[string]int{}
	for _, m := range regexp.MustCompile(`(?m)^gateway_ratelimit_decisions_total\{[^}]*source="(\w+)"\} (\d+)$`).FindAllStringSubmatch(string(b), -1) {
		n, _ := strconv.Atoi(m[2])
		out[m[1]] += n
	}
	return out
}

// `gateway demo` holds a burst of 100 concurrent requests on its
// in-process Redis: every rate-limit decision is Redis's (a call, or a
// lease of its tokens), none falls back to the local limit, and nothing fails (the refusals are 429s, by design:
// the per-company in-flight cap, and the LIVE limit of 50/s with a burst of
// 100 once the first burst spent it).
func TestDemoHoldsABurst(t *testing.T) {
	// Not parallel: the gateway runs in the test process, where its sub-second
	// Redis deadlines (a key's verification, a rate-limit decision) must not
	// compete with the parallel tests for the CPU.
	printed := runDemo(t)
	base := regexp.MustCompile(`ready on (http://\S+) \(admin API on (\S+),`).FindStringSubmatch(printed)
	key := regexp.MustCompile(`LIVE full access\s+company A\s+(igw_live_\w+)`).FindStringSubmatch(printed)
	if base == nil || key == nil {
		t.Fatalf("no address or key in:\n%s", printed)
	}
	admin := "http://" + base[2]
	for round := range 3 {
		statuses, codes := burst(t, base[1]+"/api/v1/v1/clients?pageSize=1", key[1], 100)
		// The first burst meets a full bucket; the later ones may find it
		// spent (rate 50/s), and a leased limit then refuses locally a moment.
		if round == 0 && statuses[200] == 0 || statuses[200]+statuses[429] != 100 || codes["concurrency_limit"]+codes["rate_limit_live"] != statuses[429] {
			t.Errorf("round %d: statuses %v, codes %v; want 200s and 429s of the in-flight cap or the rate limit only", round, statuses, codes)
		}
	}
	if d := decisions(t, admin); d["local"] != 0 || d["redis"]+d["lease"] != 300 {
		t.Errorf("rate-limit decisions by source %v; want all 300 by the in-process Redis (a call, or a lease taken from it)", d)
	}
}

// cpuTime is the process's user and system CPU time: on a shared machine,
// the figure that other processes' load does not inflate.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkDemoBurst: bursts of 100 concurrent requests against the demo's
// wiring (SQLite demo data, miniredis), with the limiter's Redis deadline
// the demo uses and with the default one (a Redis across a network).
// Reported: CPU and allocations per request (the load generator's
// included: it runs in the same process), how many of a burst's decisions
// fell back to the local limit, and how many script calls a burst made
// (miniredis builds a Lua interpreter for each: ~830 allocations).
func BenchmarkDemoBurst(b *testing.B) {
	for _, timeout := range []time.Duration{50 * time.Millisecond, demoRedisTimeout} {
		b.Run(fmt.Sprintf("redisTimeout=%v", timeout), func(b *testing.B) {
			ctx := context.Background()
			cfg, err := demoConfig(ctx, b.TempDir(), envOf(nil))
			if err != nil {
				b.Fatal(err)
			}
			mr := miniredis.RunT(b)
			rdb := redis.NewClient(&redis.Options{Addr: mr.Addr(), ContextTimeoutEnabled: true})
			scripts := &scriptCalls{}
			rdb.AddHook(scripts)
			d, err := connectWith(ctx, cfg, slog.New(slog.DiscardHandler), rdb, withRedisTimeout(timeout))
			if err != nil {
				b.Fatal(err)
			}
			defer d.Close()
			keys, err := demoKeys(ctx, d)
			if err != nil {
				b.Fatal(err)
			}
			pub, adm := httptest.NewServer(d.server.Handler()), httptest.NewServer(d.adminHandler())
			defer pub.Close()
			defer adm.Close()
			url := pub.URL + "/api/v1/v1/clients?pageSize=1"
			burst(b, url, keys[0].secret, 100) // warm connections and caches
			before, calls := decisions(b, adm.URL), scripts.n.Load()
			var m0, m1 runtime.MemStats
			runtime.ReadMemStats(&m0)
			b.ResetTimer()
			cpu0 := cpuTime()
			for b.Loop() {
				burst(b, url, keys[0].secret, 100)
			}
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N*100), "cpu-ns/req")
			runtime.ReadMemStats(&m1)
			b.ReportMetric(float64(m1.Mallocs-m0.Mallocs)/float64(b.N*100), "allocs/req")
			after := decisions(b, adm.URL)
			b.ReportMetric(float64(after["local"]-before["local"])/float64(b.N), "local-decisions/burst")
			b.ReportMetric(float64(scripts.n.Load()-calls)/float64(b.N), "script-calls/burst")
			if strings.Contains(b.Name(), demoRedisTimeout.String()) && after["local"] > before["local"] {
				b.Errorf("%d decisions fell back to the local limit with the demo's deadline", after["local"]-before["local"])
			}
		})
	}
}

// scriptCalls counts the script calls (EVALSHA, EVAL) a client sends.
type scriptCalls struct{ n atomic.Int64 }

func (h *scriptCalls) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *scriptCalls) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if n := cmd.Name(); n == "evalsha" || n == "eval" {
			h.n.Add(1)
		}
		return next(ctx, cmd)
	}
}

func (h *scriptCalls) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			if n := cmd.Name(); n == "evalsha" || n == "eval" {
				h.n.Add(1)
			}
		}
		return next(ctx, cmds)
	}
}
