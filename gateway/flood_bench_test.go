package gateway_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/invoicing-ao/gateway/admin"
	"github.com/invoicing-ao/gateway/authz"
	"github.com/invoicing-ao/gateway/gateway"
	"github.com/invoicing-ao/gateway/internal/jsonlog"
	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
	"github.com/invoicing-ao/gateway/tenants"
)

// A known key's latency while distinct unknown keys flood the gateway
// (docs/performance.md, Unknown keys): the flood comes over HTTP from a
// process of its own (TestFloodChild, as a load tool would), from 256
// addresses behind a trusted proxy at floodRate requests/s, each key new;
// the known key is sent every knownEvery, straight to the handler, and its
// latency is the gateway's own (as gateway_http_request_duration_seconds
// sees it). "quiet" has no flood; "bounded" runs the bound of lookups at its
// defaults, "unbounded" without it, so that every unknown key costs a
// lookup; "typos" floods with keys whose checksum is wrong, refused before
// any lookup, for reference. Redis is a server of the benchmark's own,
// whose HGETALLs and CPU it reports per second. It measures; it asserts
// nothing about time.
const (
	floodRate  = 8000
	floodConns = 16
	knownEvery = 2 * time.Millisecond
)

func BenchmarkKnownKeyUnderFlood(b *testing.B) {
	for _, mode := range []string{"quiet", "bounded", "unbounded", "typos"} {
		b.Run(mode, func(b *testing.B) {
			srv := testenv.StartRedisServer(b, 0)
			rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
			b.Cleanup(func() { rdb.Close() })
			h, known := floodBenchHandler(b, rdb, mode == "unbounded")
			w := &discardWriter{h: http.Header{}}
			h.ServeHTTP(w, known) // warm the caches
			if w.status != http.StatusOK {
				b.Fatalf("known key: %d", w.status)
			}

			var sent atomic.Int64
			var stop func()
			if mode != "quiet" {
				pub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					sent.Add(1)
					h.ServeHTTP(w, r)
				}))
				b.Cleanup(pub.Close)
				stop = startFlood(b, pub.URL, mode == "typos")
			}
			if stop != nil { // the flood under way: its requests arrive
				testenv.Eventually(b, "the flood's first requests", func() error {
					return testenv.Want(sent.Load() >= floodConns, true, "requests of every connection")
				})
			}
			lookups0, sent0, start, cpu0, rcpu0 := redisCalls(b, rdb, "hgetall"), sent.Load(), time.Now(), cpuTime(), redisCPU(b, rdb)

			lat := make([]time.Duration, 0, 4096)
			tick := time.NewTicker(knownEvery) // the known key's pace
			defer tick.Stop()
			for b.Loop() {
				<-tick.C
				clear(w.h)
				t0 := time.Now()
				h.ServeHTTP(w, known)
				lat = append(lat, time.Since(t0))
				if w.status != http.StatusOK {
					b.Fatalf("known key during the flood: %d", w.status)
				}
			}
			elapsed, cpu, rcpu := time.Since(start).Seconds(), cpuTime()-cpu0, redisCPU(b, rdb)-rcpu0
			lookups, flood := redisCalls(b, rdb, "hgetall")-lookups0, sent.Load()-sent0
			if stop != nil {
				stop()
			}
			slices.Sort(lat)
			q := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) }
			b.ReportMetric(q(0.5), "p50-µs")
			b.ReportMetric(q(0.99), "p99-µs")
			b.ReportMetric(float64(flood)/elapsed, "flood-req/s")
			b.ReportMetric(float64(lookups)/elapsed, "lookups/s")
			// The gateway's CPU per second (the flood's is its own process's).
			b.ReportMetric(cpu.Seconds()/elapsed, "cpu-s/s")
			b.ReportMetric(rcpu/elapsed, "redis-cpu-s/s")
		})
	}
}

// redisCPU is the CPU time the Redis server has used, in seconds (INFO cpu).
func redisCPU(b *testing.B, rdb *redis.Client) float64 {
	info, err := rdb.Info(context.Background(), "cpu").Result()
	if err != nil {
		b.Fatal(err)
	}
	var sum float64
	for _, line := range strings.Split(info, "\r\n") {
		name, v, _ := strings.Cut(line, ":")
		if name == "used_cpu_sys" || name == "used_cpu_user" {
			f, _ := strconv.ParseFloat(v, 64)
			sum += f
		}
	}
	return sum
}

// floodBenchHandler is the public handler on a fixed store, a real Keyring
// (the bound of lookups at its defaults, or off) and Limiter on rdb, the
// loopback a trusted proxy; and a request of a known key.
func floodBenchHandler(b *testing.B, rdb *redis.Client, unbounded bool) (http.Handler, *http.Request) {
	logger := slog.New(jsonlog.New(io.Discard, nil))
	tp := noop.NewTracerProvider()
	kcfg := authz.Config{Redis: rdb, Prefix: "bench:authz:", Logger: logger, TracerProvider: tp}
	if unbounded {
		kcfg.SourceLookups.Rate, kcfg.InstanceLookups.Rate = -1, -1
	}
	ring := authz.New(kcfg)
	b.Cleanup(func() { _ = ring.Close() })
	lim := tenants.New(tenants.Config{Redis: rdb, Prefix: "bench:tenants:", Logger: logger, TracerProvider: tp,
		LiveDefault: tenants.Limit{Rate: tenants.MaxRate, Burst: tenants.MaxBurst}})
	store := newFixedStore(1)
	srv := gateway.New(gateway.Config{Live: store, Test: store, Keys: ring, Limiter: lim, Logger: logger, TracerProvider: tp,
		Guard: tenants.NewGuard(tenants.GuardConfig{}), TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})
	scopes, _ := authz.ParseScopes("clients:read")
	adm := admin.New(admin.Config{Keys: ring, Limiter: lim, Companies: store, Logger: logger})
	v, err := adm.Keys.CreateKey(context.Background(), "bench@local", admin.KeySpec{CompanyID: benchCompany(0), Mode: invoicing.Live, Scopes: scopes, Name: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	r, _ := http.NewRequest(http.MethodGet, "http://gw.test/api/v1/v1/clients/11000000-0000-4000-8000-000000000000", nil)
	r.Header.Set("Authorization", "Bearer "+v.Key)
	r.Header.Set("X-Company-Id", benchCompany(0))
	r.RemoteAddr = "203.0.113.9:4000"
	return srv.Handler(), r
}

// startFlood runs TestFloodChild against url in a process of its own, and
// returns what stops it.
func startFlood(b *testing.B, url string, typos bool) (stop func()) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestFloodChild$")
	cmd.Env = append(os.Environ(), "GATEWAY_FLOOD_URL="+url, "GATEWAY_FLOOD_TYPOS="+strconv.FormatBool(typos))
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	stop = func() {
		in.Close() // the child stops when its stdin closes
		_ = cmd.Wait()
	}
	b.Cleanup(stop)
	return stop
}

// TestFloodChild is BenchmarkKnownKeyUnderFlood's flood, in a process of
// its own: distinct unknown keys (checksums right, and of the first form;
// with GATEWAY_FLOOD_TYPOS, checksums wrong) to GATEWAY_FLOOD_URL at
// floodRate over floodConns connections, until its stdin closes.
func TestFloodChild(t *testing.T) {
	url := os.Getenv("GATEWAY_FLOOD_URL")
	if url == "" {
		t.Skip("run by BenchmarkKnownKeyUnderFlood")
	}
	typos := os.Getenv("GATEWAY_FLOOD_TYPOS") == "true"
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		cancel()
	}()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: floodConns}}
	var n atomic.Int64
	var wg sync.WaitGroup
	for c := range floodConns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Each connection's share of floodRate, paced by a ticker.
			tick := time.NewTicker(time.Duration(floodConns) * time.Second / floodRate)
			defer tick.Stop()
			for ctx.Err() == nil {
				i := n.Add(1)
				key := fmt.Sprintf("igw_live_%043d", i)
				if i%2 == 0 || typos {
					key = withChecksum(key)
				}
				if typos {
					key = key[:len(key)-1] + "!"
				}
				r, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/api/v1/v1/clients", nil)
				r.Header.Set("Authorization", "Bearer "+key)
				r.Header.Set("X-Company-Id", benchCompany(0))
				r.Header.Set("X-Forwarded-For", fmt.Sprintf("198.51.100.%d", (int(i)+c)%256))
				if res, err := client.Do(r); err == nil {
					_, _ = io.Copy(io.Discard, res.Body)
					res.Body.Close()
				}
				select {
				case <-tick.C:
				case <-ctx.Done():
				}
			}
		}()
	}
	wg.Wait()
}
