package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
)

// The bound of lookups of unknown keys at its defaults (authz.Config): per
// source 2/s, burst 20; per instance 100/s, burst 200.
const (
	sourceBurst   = 20
	sourceRate    = 2
	instanceBurst = 200
)

// floodAnswer is what the flood test keeps of an answer.
type floodAnswer struct {
	status     int
	code       string
	retryAfter string
	rateLimit  bool // a RateLimit field was sent
}

// floodClient sends requests as from a client address behind the trusted
// proxy (the loopback), reading only the status and the problem code.
type floodClient struct {
	t    *testing.T
	base string
	c    *http.Client
}

func (f *floodClient) send(key, company, from string) floodAnswer {
	r, err := http.NewRequest(http.MethodGet, f.base+"/api/v1/v1/clients?pageSize=1", nil)
	if err != nil {
		panic(err)
	}
	r.Header.Set("Authorization", "Bearer "+key)
	r.Header.Set("X-Company-Id", company)
	r.Header.Set("X-Forwarded-For", from)
	res, err := f.c.Do(r)
	if err != nil {
		f.t.Error(err)
		return floodAnswer{}
	}
	defer res.Body.Close()
	a := floodAnswer{status: res.StatusCode, retryAfter: res.Header.Get("Retry-After"), rateLimit: res.Header.Get("RateLimit") != ""}
	if res.StatusCode != 200 {
		var p struct{ Code string }
		if err := json.NewDecoder(res.Body).Decode(&p); err != nil {
			f.t.Errorf("status %d without a problem body: %v", res.StatusCode, err)
		}
		a.code = p.Code
	}
	_, _ = io.Copy(io.Discard, res.Body)
	return a
}

// redisCalls is how many times this Redis server ran the command, since its
// statistics were reset (INFO commandstats).
func redisCalls(t testing.TB, rdb *redis.Client, cmd string) int {
	t.Helper()
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^cmdstat_` + cmd + `:calls=(\d+),`).FindStringSubmatch(info)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// metricValue reads one series of the instance's /metrics.
func metricValue(t *testing.T, in *instance, series string) int {
	t.Helper()
	r := do(t, in.admin.URL, req{Path: "/metrics"})
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\S+)$`).FindStringSubmatch(string(r.Body))
	if m == nil {
		t.Fatalf("/metrics has no series %s", series)
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatal(err)
	}
	return int(v)
}

// tally counts answers by status and code.
type tally struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *tally) add(a floodAnswer) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[fmt.Sprintf("%d %s", a.status, a.code)]++
}

func (c *tally) get(k string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[k]
}

// A flood of distinct, well-formed unknown keys (checksums right, and of
// the first form), from one source and then from many, on a Redis server of
// the test's own whose command counts are exact: the lookups they cost stop
// at the bound, per source and per instance, the excess is 429
// key_lookups_limited without a lookup, and a known key is answered 200
// throughout, from a quiet source and from the flooding one. The instance's
// clock stands still, so the buckets do not refill until the test moves it:
// the bound is then exactly the bursts.
func TestUnknownKeyFlood(t *testing.T) {
	t.Parallel()
	srv := testenv.StartRedisServer(t, 0)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { rdb.Close() })
	w := newWorld(t)
	in := w.start(withRedis(rdb), withTrustedProxies(netip.MustParsePrefix("127.0.0.0/8")))
	good := in.key(t, coA, invoicing.Live, allScopes)
	unused := in.key(t, coB, invoicing.Live, allScopes) // exists, never used before the flood
	fc := &floodClient{t: t, base: in.pub.URL, c: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}}
	t.Cleanup(fc.c.CloseIdleConnections)
	if err := rdb.ConfigResetStat(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	if a := fc.send(good.Key, coA, "203.0.113.9"); a.status != 200 {
		t.Fatalf("good key: %+v", a)
	}
	f := &unknownFlood{t: t, fc: fc, rdb: rdb, rng: rand.New(rand.NewPCG(3, 4))}
	f.first = redisCalls(t, rdb, "hgetall") // the good key's first lookup

	// The known key keeps asking, from a quiet source and from the
	// flooding one, for the whole flood.
	stopKnown := keepAsking(fc, good.Key, "203.0.113.9", "198.51.100.7")
	one, many := f.fromOneSource(), f.fromManySources()
	if known := stopKnown(); known.get("200 ") == 0 || len(known.n) != 1 {
		t.Errorf("the known key during the flood: %v, want only 200s", known.n)
	}

	// Typos never cost a lookup, bound or not; one 429 is checked against
	// the document.
	typo := []byte(good.Key)
	typo[len(typo)-1] = base62[(strings.IndexByte(base62, typo[len(typo)-1])+1)%62]
	for range 50 {
		if a := fc.send(string(typo), coA, "198.51.100.99"); a.status != 401 || a.code != "invalid_api_key" {
			t.Fatalf("a typo of the good key: %+v", a)
		}
	}
	expectProblem(t, do(t, in.pub.URL, req{Path: "/api/v1/v1/clients", Key: randomSecret(f.rng), Company: coA,
		Header: map[string]string{"X-Forwarded-For": "198.51.100.7"}}), 429, "key_lookups_limited")

	// The cost of the bound: a good key this instance never verified, sent
	// now, is refused unchecked (429, retryable) until the instance's bucket
	// refills. One second later it is looked up and works, found keys spend
	// nothing, and the flooding source has refilled at its rate.
	if a := fc.send(unused.Key, coB, "192.0.2.1"); a.status != 429 || a.code != "key_lookups_limited" {
		t.Errorf("an unused good key with the instance's bound spent: %+v, want 429 key_lookups_limited", a)
	}
	in.clock.Add(time.Second)
	if a := fc.send(unused.Key, coB, "192.0.2.1"); a.status != 200 {
		t.Errorf("the unused good key a second later: %+v, want 200", a)
	}
	again := f.flood([]string{"198.51.100.7"}, 100)
	if n := answered(again, "401 invalid_api_key"); n != sourceRate {
		t.Errorf("the flooding source a second later: %d lookups, want %d (its rate)", n, sourceRate)
	}
	refusals := answered(one, "429 key_lookups_limited") + answered(many, "429 key_lookups_limited") + answered(again, "429 key_lookups_limited") + 2
	checkLookupMetrics(t, in, rdb, refusals)
}

// keepAsking sends key from each source, over and over, until the returned
// stop is called; stop returns the answers.
func keepAsking(fc *floodClient, key string, sources ...string) (stop func() *tally) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	var known tally
	for _, from := range sources {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				known.add(fc.send(key, coA, from))
			}
		}()
	}
	return func() *tally {
		close(done)
		wg.Wait()
		return &known
	}
}

// unknownFlood sends distinct unknown keys and counts the lookups they
// cost in Redis, from first (the lookups before the flood).
type unknownFlood struct {
	t     *testing.T
	fc    *floodClient
	rdb   *redis.Client
	first int
	mu    sync.Mutex
	rng   *rand.Rand
}

// key is a new unknown key, of either form.
func (f *unknownFlood) key() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.rng.IntN(2) == 0 {
		return randomLegacySecret(f.rng)
	}
	return randomSecret(f.rng)
}

// flood sends n distinct unknown keys from each of the sources, with 8
// requests in flight, and tallies the answers per source.
func (f *unknownFlood) flood(sources []string, n int) map[string]*tally {
	per := map[string]*tally{}
	jobs := make(chan string)
	for _, s := range sources {
		per[s] = &tally{}
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for from := range jobs {
				a := f.fc.send(f.key(), coA, from)
				per[from].add(a)
				if a.status == 429 && (a.retryAfter == "" || a.rateLimit) {
					f.t.Errorf("429 with Retry-After %q and RateLimit fields %v", a.retryAfter, a.rateLimit)
				}
			}
		}()
	}
	for i := 0; i < n; i++ {
		for _, s := range sources {
			jobs <- s
		}
	}
	close(jobs)
	wg.Wait()
	return per
}

func answered(per map[string]*tally, k string) (sum int) {
	for _, c := range per {
		sum += c.get(k)
	}
	return sum
}

// fromOneSource: 1,000 keys from one source cost 20 lookups (its burst),
// then are refused.
func (f *unknownFlood) fromOneSource() map[string]*tally {
	t := f.t
	one := f.flood([]string{"198.51.100.7"}, 1000)
	lookups := redisCalls(t, f.rdb, "hgetall") - f.first
	if lookups != sourceBurst || answered(one, "401 invalid_api_key") != sourceBurst || answered(one, "429 key_lookups_limited") != 1000-sourceBurst {
		t.Errorf("1,000 unknown keys from one source: %d lookups, answers %v; want %d lookups and 401s, the rest 429",
			lookups, one["198.51.100.7"].n, sourceBurst)
	}
	return one
}

// fromManySources: forty other sources, 30 keys each: no source beyond its
// burst, and all together stop at the instance's burst.
func (f *unknownFlood) fromManySources() map[string]*tally {
	t := f.t
	var sources []string
	for i := range 40 {
		sources = append(sources, fmt.Sprintf("198.51.100.%d", 10+i))
	}
	many := f.flood(sources, 30)
	for s, c := range many {
		if n := c.get("401 invalid_api_key"); n > sourceBurst {
			t.Errorf("source %s: %d lookups, over its burst %d", s, n, sourceBurst)
		}
	}
	lookups := redisCalls(t, f.rdb, "hgetall") - f.first
	if lookups != instanceBurst || answered(many, "401 invalid_api_key") != instanceBurst-sourceBurst ||
		answered(many, "429 key_lookups_limited") != 40*30-(instanceBurst-sourceBurst) {
		t.Errorf("after 1,200 unknown keys from 40 sources: %d lookups in all, answers %d × 401, %d × 429; want %d lookups",
			lookups, answered(many, "401 invalid_api_key"), answered(many, "429 key_lookups_limited"), instanceBurst)
	}
	return many
}

// checkLookupMetrics: /metrics says the same as Redis, and counts the
// refusals and the 50 typos.
func checkLookupMetrics(t *testing.T, in *instance, rdb *redis.Client, refusals int) {
	t.Helper()
	lookups := redisCalls(t, rdb, "hgetall")
	got := map[string]int{
		"unknown invalid": metricValue(t, in, `gateway_key_lookups_total{key="unknown",result="invalid"}`),
		"unknown found":   metricValue(t, in, `gateway_key_lookups_total{key="unknown",result="found"}`),
		"known":           metricValue(t, in, `gateway_key_lookups_total{key="known",result="found"}`),
		"source_limit":    metricValue(t, in, `gateway_key_refused_total{reason="source_limit"}`),
		"instance_limit":  metricValue(t, in, `gateway_key_refused_total{reason="instance_limit"}`),
		"checksum":        metricValue(t, in, `gateway_key_refused_total{reason="checksum"}`),
	}
	if got["unknown invalid"]+got["unknown found"]+got["known"] != lookups || got["unknown found"] < 2 ||
		got["source_limit"]+got["instance_limit"] != refusals || got["checksum"] != 50 {
		t.Errorf("metrics %v; Redis ran %d lookups, the flood had %d refusals and 50 typos", got, lookups, refusals)
	}
}
