package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/invoicing-ao/gateway/backend"
	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
)

// Faults of the real dependencies, end to end: PostgreSQL cut, paused and
// slow (through a TCP fault proxy or a table lock), Redis killed and
// restarted. The promise under test: every answer is the truth (200 or a
// 503 with Retry-After, never a 500, never a 401 for a good key), an open
// breaker answers at once, and the gateway recovers by itself.

func withStore(f func(*backend.Config)) instanceOpt {
	return func(c *instanceConfig) { c.store = f }
}

// viaProxy points both databases at p, with the given deadline and breaker,
// then applies more.
func viaProxy(p *testenv.FaultProxy, timeout time.Duration, failures int, openFor time.Duration, more ...func(*backend.Config)) instanceOpt {
	return withStore(func(c *backend.Config) {
		c.URL = p.Via(c.URL)
		c.QueryTimeout, c.BreakerFailures, c.BreakerOpenFor = timeout, failures, openFor
		for _, f := range more {
			f(c)
		}
	})
}

// hit is one request from a load client: no *testing.T, so that it can run
// on any goroutine.
type hit struct {
	status     int
	code       string
	retryAfter string
	problem    bool // Content-Type application/problem+json
	took       time.Duration
	err        error
}

func (h hit) String() string {
	return fmt.Sprintf("%d %s (Retry-After %q, %v, err %v)", h.status, h.code, h.retryAfter, h.took, h.err)
}

var faultClient = &http.Client{Timeout: 30 * time.Second}

func send(method, url, key, company, body string) hit {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	r, err := http.NewRequest(method, url, rd)
	if err != nil {
		return hit{err: err}
	}
	r.Header.Set("Authorization", "Bearer "+key)
	r.Header.Set("X-Company-Id", company)
	if body != "" {
		r.Header.Set("Content-Type", "application/json")
	}
	start := time.Now()
	res, err := faultClient.Do(r)
	if err != nil {
		return hit{err: err, took: time.Since(start)}
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	h := hit{status: res.StatusCode, retryAfter: res.Header.Get("Retry-After"), took: time.Since(start),
		problem: res.Header.Get("Content-Type") == "application/problem+json"}
	var p struct{ Code string }
	_ = json.Unmarshal(b, &p)
	h.code = p.Code
	return h
}

// checkUnavailable asserts a well-formed 503 database_unavailable.
func checkUnavailable(t *testing.T, h hit, maxRetry int) {
	t.Helper()
	ra, err := strconv.Atoi(h.retryAfter)
	if h.status != 503 || h.code != "database_unavailable" || !h.problem || err != nil || ra < 1 || ra > maxRetry {
		t.Fatalf("want 503 database_unavailable, problem+json, Retry-After 1..%d; got %v", maxRetry, h)
	}
}

// firstClient is a client id of company coA, read before any fault.
func firstClient(t *testing.T, s *backend.Store) string {
	t.Helper()
	p, err := s.ListClients(context.Background(), coA, invoicing.ClientFilter{Page: 1, PageSize: 1})
	if err != nil || len(p.Data) == 0 {
		t.Fatalf("a client of %s: %v", coA, err)
	}
	return p.Data[0].ID
}

// PostgreSQL cut under load from several clients: only 200s and 503s (with
// Retry-After and a problem body), the breaker opens, an open breaker answers
// at once without touching the database, and after the database comes back
// a client that waits the Retry-After it was given is served.
func TestPostgresCutUnderLoad(t *testing.T) {
	// Not parallel: it measures answer times against the query timeout,
	// which other tests' load on the machine's cores would stretch.
	w := newWorld(t)
	proxy := testenv.PostgresProxy(t)
	clock := testenv.NewClock(time.Now())
	timeout := 2 * time.Second
	in := w.start(viaProxy(proxy, timeout, 3, 4*time.Second, breakerClock(clock)))
	k := in.key(t, coA, invoicing.Live, allScopes)
	client := firstClient(t, in.live)
	paths := []string{"/api/v1/v1/clients/" + client, "/api/v1/v1/invoices?pageSize=5", "/api/v1/v1/clients?pageSize=5"}
	if h := send("GET", in.pub.URL+paths[0], k.Key, coA, ""); h.status != 200 {
		t.Fatalf("before the cut: %v", h)
	}

	hits := loadAcrossCut(proxy, in.live, func(i int) hit { return send("GET", in.pub.URL+paths[i%len(paths)], k.Key, coA, "") })
	ok, unavailable := 0, 0
	for _, h := range hits {
		switch h.status {
		case 200:
			ok++
		case 503:
			unavailable++
			checkUnavailable(t, h, 1)
		default:
			t.Fatalf("under a cut: %v", h)
		}
	}
	t.Logf("%d requests under load: %d OK, %d 503", len(hits), ok, unavailable)
	if ok == 0 || unavailable == 0 {
		t.Fatalf("%d OK and %d 503: the load did not span the cut", ok, unavailable)
	}
	if st := in.live.BreakerState(); st != "open" {
		t.Fatalf("breaker %s after the cut under load, want open", st)
	}

	// Let the probe that is due fail, then make the database hang: a
	// request that touched it would take the whole query timeout.
	clock.Add(retryAfter(t, send("GET", in.pub.URL+paths[0], k.Key, coA, "")))
	checkUnavailable(t, send("GET", in.pub.URL+paths[0], k.Key, coA, ""), 1)
	if st := in.live.BreakerState(); st != "open" {
		t.Fatalf("breaker %s after a failed probe, want open", st)
	}
	proxy.Pause()
	seen := proxy.Accepted()
	var slowest time.Duration
	var last hit
	for range 5 {
		last = send("GET", in.pub.URL+paths[0], k.Key, coA, "")
		checkUnavailable(t, last, 1)
		slowest = max(slowest, last.took)
	}
	t.Logf("open breaker, database hung: slowest of 5 answers %v", slowest)
	if slowest >= timeout {
		t.Errorf("open breaker answered in %v: it waited on the database", slowest)
	}
	// Each refused request that reached the database would have opened a
	// connection (the cut closed them all). One stray background dial has
	// been seen under heavy machine load; five would be the breaker's fault.
	if n := proxy.Accepted() - seen; n >= 5 {
		t.Errorf("5 requests refused by an open breaker opened %d connections to the database", n)
	} else if n > 0 {
		t.Logf("%d connection(s) opened while the breaker was open (not by the refused requests)", n)
	}

	// The database back, a client that waits its Retry-After is served.
	proxy.Resume()
	clock.Add(retryAfter(t, last))
	servedWaitingRetryAfter(t, clock, 4, func() hit { return send("GET", in.pub.URL+paths[0], k.Key, coA, "") })
	if st := in.live.BreakerState(); st != "closed" {
		t.Fatalf("breaker %s after recovery", st)
	}
}

// servedWaitingRetryAfter sends until a 200, waiting (on clock) each
// Retry-After it is given, of at most maxRetry seconds. More than one wait
// may be needed on a busy machine: the probe the wait was for can be taken
// by another call, or fail on a connection dialled while the database hung;
// each refusal says when to come back. Every answer meanwhile must be the
// truth.
func servedWaitingRetryAfter(t *testing.T, clock *testenv.Clock, maxRetry int, get func() hit) {
	t.Helper()
	testenv.Eventually(t, "a 200 after waiting Retry-After with the database back", func() error {
		h := get()
		if h.status == 200 {
			return nil
		}
		checkUnavailable(t, h, maxRetry)
		clock.Add(retryAfter(t, h))
		return fmt.Errorf("%v", h)
	})
}

// loadAcrossCut sends requests (get(i)) from 4 clients, cuts the database
// once 20 have been answered, and stops the load once st's breaker is open
// and 20 more answers have come since: the load spans the cut, however slow
// the machine. It returns every answer.
func loadAcrossCut(proxy *testenv.FaultProxy, st *backend.Store, get func(i int) hit) []hit {
	var mu sync.Mutex
	var hits []hit
	served, opened := make(chan struct{}), make(chan struct{})
	var sinceOpen atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for c := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := c; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				h := get(i)
				mu.Lock()
				hits = append(hits, h)
				if len(hits) == 20 {
					close(served)
				}
				mu.Unlock()
				if st.BreakerState() == "open" && sinceOpen.Add(1) == 20 {
					close(opened)
				}
			}
		}()
	}
	<-served
	proxy.Cut()
	<-opened
	close(stop)
	wg.Wait()
	return hits
}

// A slow query (a table lock held elsewhere) ends at the query timeout with a
// 503, and other tables keep answering.
func TestSlowQueryEndsAtDeadline(t *testing.T) {
	// Not parallel: it measures answer times against the query timeout,
	// which other tests' load on the machine's cores would stretch.
	w := newWorld(t)
	// Long enough that the other tables answer within it on a busy
	// machine; the lock is held for good, so only the deadline ends the
	// locked query.
	timeout := 2 * time.Second
	in := w.start(withStore(func(c *backend.Config) { c.QueryTimeout = timeout }))
	k := in.key(t, coA, invoicing.Live, allScopes)
	url := in.pub.URL + "/api/v1/v1/clients/" + firstClient(t, in.live)
	if h := send("GET", url, k.Key, coA, ""); h.status != 200 {
		t.Fatalf("before the lock: %v", h)
	}
	ctx := context.Background()
	tx := testenv.LockTable(t, w.live, "customers")

	h := send("GET", url, k.Key, coA, "")
	checkUnavailable(t, h, 1)
	// Not before the deadline; after it, by far less than forever (the
	// upper bound is loose: a busy machine stretches the answer).
	if h.took < timeout || h.took > 5*timeout {
		t.Errorf("a query behind a lock answered after %v; the query timeout is %v", h.took, timeout)
	}
	if h := send("GET", in.pub.URL+"/api/v1/v1/invoices?pageSize=5", k.Key, coA, ""); h.status != 200 {
		t.Errorf("invoices while customers is locked: %v", h)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if h := send("GET", url, k.Key, coA, ""); h.status != 200 {
		t.Fatalf("after the lock: %v", h)
	}
	if st := in.live.BreakerState(); st != "closed" {
		t.Errorf("one slow query opened the breaker: %s", st)
	}
}

// Redis killed: a key verified before keeps working from memory, rate limits
// are decided locally, an unknown key gets 503 (never 401), a malformed one
// still 401. Redis restarted: everything works again by itself.
func TestRedisKilledAndRestarted(t *testing.T) {
	// Not parallel: its Redis comes back on the port it had, which a
	// parallel test's server could take while it is down.
	w := newWorld(t)
	srv := testenv.StartRedisServer(t, 0)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = rdb.Close() })
	in := w.start(withRedis(rdb))
	k := in.key(t, coA, invoicing.Live, allScopes)
	url := in.pub.URL + "/api/v1/v1/invoices?pageSize=5"
	unknown := "igw_live_" + strings.Repeat("Z", 43) // well formed, never issued
	if h := send("GET", url, k.Key, coA, ""); h.status != 200 {
		t.Fatalf("Redis up: %v", h)
	}
	// A first lookup on a busy machine can outlast the verification's
	// 250 ms (503, as it should): Redis being up is what is checked here.
	testenv.Eventually(t, "an unknown key refused with Redis up", func() error {
		if h := send("GET", url, unknown, coA, ""); h.status != 401 || h.code != "invalid_api_key" {
			return fmt.Errorf("unknown key with Redis up: %v", h)
		}
		return nil
	})
	// The keys are data a production Redis persists: write them to disk so
	// that the restarted server has them.
	if err := rdb.Save(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}

	srv.Kill()
	in.clock.Add(2 * time.Second) // past the key cache's 1 s: Redis must be asked
	var slowest time.Duration
	for i := range 30 {
		h := send("GET", url, k.Key, coA, "")
		if h.status != 200 {
			t.Fatalf("request %d with a known key, Redis down: %v", i, h)
		}
		slowest = max(slowest, h.took)
	}
	t.Logf("known key, Redis down: slowest of 30 requests %v", slowest)
	if !in.limiter.Fallback() {
		t.Error("the limiter is not in local fallback with Redis down")
	}
	h := send("GET", url, unknown, coA, "")
	if h.status != 503 || h.code != "authentication_unavailable" || h.retryAfter == "" || !h.problem {
		t.Fatalf("unknown key, Redis down: %v, want 503 authentication_unavailable with Retry-After", h)
	}
	if h := send("GET", url, "igw_live_short", coA, ""); h.status != 401 {
		t.Fatalf("malformed key, Redis down: %v (no Redis is needed to refuse it)", h)
	}

	srv.Restart()
	in.clock.Add(2 * time.Second)
	start := time.Now()
	testenv.Eventually(t, "Redis in use again after the restart", func() error {
		good := send("GET", url, k.Key, coA, "")
		bad := send("GET", url, unknown, coA, "")
		if good.status != 200 && good.status != 503 {
			t.Fatalf("known key while Redis restarts: %v", good)
		}
		if good.status == 200 && bad.status == 401 && !in.limiter.Fallback() {
			return nil
		}
		return fmt.Errorf("known key %v, unknown key %v, fallback %v", good, bad, in.limiter.Fallback())
	})
	t.Logf("Redis in use again %v after the restart", time.Since(start))
}

// A burst of client errors (404, 409, 400) never opens the breaker: the
// database answered every one of them.
func TestClientErrorsKeepTheBreakerClosed(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	in := w.start(withStore(func(c *backend.Config) { c.BreakerFailures = 2; c.BreakerOpenFor = time.Minute }))
	k := in.key(t, coA, invoicing.Live, allScopes)
	base := in.pub.URL + "/api/v1/v1"
	const missing = "99999999-9999-4999-8999-999999999999"
	body := `{"name":"Cliente Repetido","nif":"5417123456"}`
	if h := send("POST", base+"/clients", k.Key, coA, body); h.status != 201 {
		t.Fatalf("create: %v", h)
	}
	for range 10 {
		for _, c := range []struct {
			method, url, body string
			status            int
		}{
			{"GET", base + "/clients/" + missing, "", 404},
			{"GET", base + "/invoices/" + missing, "", 404},
			{"POST", base + "/clients", body, 409},
			{"GET", base + "/invoices?pageSize=101", "", 400},
			{"POST", base + "/clients", `{"name":""}`, 400},
		} {
			if h := send(c.method, c.url, k.Key, coA, c.body); h.status != c.status {
				t.Fatalf("%s %s: %v, want %d", c.method, c.url, h, c.status)
			}
		}
	}
	if st := in.live.BreakerState(); st != "closed" {
		t.Fatalf("breaker %s after client errors", st)
	}
	if h := send("GET", base+"/clients/"+firstClient(t, in.live), k.Key, coA, ""); h.status != 200 {
		t.Fatalf("after the burst: %v", h)
	}
}
