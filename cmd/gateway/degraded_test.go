package main

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/invoicing-ao/gateway/authz"
	"github.com/invoicing-ao/gateway/backend/gendata"
	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
)

// `gateway serve` starts with each of its dependencies down in turn (cut
// behind a fault proxy before the process starts): it serves what it can,
// says what is down and why, and recovers alone when the dependency comes
// back, with no restart.
func TestServeStartsDegradedAndRecovers(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	for _, down := range []string{"live database", "sandbox database", "Redis"} {
		t.Run(strings.ReplaceAll(down, " ", "_"), func(t *testing.T) {
			t.Parallel()
			r := newDegradedRig(t, down)
			p := startProcess(t, bin, []string{
				"GATEWAY_ADDR=127.0.0.1:0", "GATEWAY_ADMIN_ADDR=127.0.0.1:0", "GATEWAY_REDIS_URL=" + r.redisURL,
				"GATEWAY_REDIS_PREFIX=" + r.prefix, "GATEWAY_LIVE_DATABASE_URL=" + r.live, "GATEWAY_TEST_DATABASE_URL=" + r.test,
				"GATEWAY_HISTORY_DATABASE_URL=" + testenv.Postgres(t),
				"GATEWAY_BREAKER_OPEN_FOR=1s", "GATEWAY_DRAIN_DELAY=0s",
			})
			checkServedDegraded(t, p, r, down)
			r.bringUp()
			checkRecovered(t, p, r, down)
			if down == "Redis" {
				checkResealedOnceRedisAnswers(t, p)
			}
		})
	}
}

// degradedRig is a gateway's dependencies with one of them down from
// before the start, and how to bring it up: a database behind a fault proxy
// that refuses, then forwards; Redis on a port nothing listens on, where a
// redis-server of the test's own then starts (its keys made then).
type degradedRig struct {
	live, test, redisURL, prefix string
	where                        string                    // the address of the one down
	secret                       map[invoicing.Mode]string // a key of company A in each mode
	bringUp                      func()
}

func newDegradedRig(t *testing.T, down string) *degradedRig {
	t.Helper()
	ctx := context.Background()
	r := &degradedRig{live: testenv.Postgres(t), test: testenv.Postgres(t), redisURL: testenv.RedisURL()}
	if _, err := gendata.SetUpSmall(ctx, r.live, r.test, 11); err != nil {
		t.Fatal(err)
	}
	var rdb redis.UniversalClient
	rdb, r.prefix = testenv.Redis(t)
	mkKeys := func(rdb redis.UniversalClient) map[invoicing.Mode]string {
		keys := authz.New(authz.Config{Redis: rdb, Prefix: r.prefix + "authz:"})
		defer keys.Close()
		all, _ := authz.ParseScopes("invoices:read,clients:read,clients:write")
		secret := map[invoicing.Mode]string{}
		for _, m := range invoicing.Modes {
			_, s, err := keys.Create(ctx, authz.NewKey{CompanyID: gendata.DemoCompanyA, Mode: m, Scopes: all, Name: "degraded"})
			if err != nil {
				t.Fatal(err)
			}
			secret[m] = s
		}
		return secret
	}
	switch down {
	case "live database", "sandbox database":
		proxy := testenv.PostgresProxy(t)
		if down == "live database" {
			r.live = proxy.Via(r.live)
		} else {
			r.test = proxy.Via(r.test)
		}
		proxy.Cut()
		r.where, r.bringUp = proxy.Addr(), proxy.Resume
		r.secret = mkKeys(rdb)
	case "Redis":
		port := testenv.ClosedPort(t)
		r.where, r.redisURL = "127.0.0.1:"+port, "redis://127.0.0.1:"+port+"/0"
		unknown := "_" + strings.Repeat("K", 43)
		r.secret = map[invoicing.Mode]string{invoicing.Live: "igw_live" + unknown, invoicing.Test: "igw_test" + unknown}
		r.bringUp = func() {
			p, _ := strconv.Atoi(port)
			srv := testenv.StartRedisServer(t, p)
			own := redis.NewClient(&redis.Options{Addr: srv.Addr()})
			defer own.Close()
			r.secret = mkKeys(own)
		}
	}
	return r
}

// checkServedDegraded: the process says what is down, where and why, is
// ready but degraded, and serves what it can: the mode whose database is
// down answers 503, the other is served; with Redis down keys cannot be
// verified.
func checkServedDegraded(t *testing.T, p *process, r *degradedRig, down string) {
	t.Helper()
	warn := p.waitLog(t, func(m map[string]any) bool {
		return m["msg"] == "dependency unavailable; serving without it until it answers"
	})
	setting := map[string]string{"live database": "GATEWAY_LIVE_DATABASE_URL", "sandbox database": "GATEWAY_TEST_DATABASE_URL", "Redis": "GATEWAY_REDIS_URL"}[down]
	if warn["level"] != "WARN" || warn["dependency"] != down || !strings.Contains(warn["setting"].(string), setting) ||
		!strings.Contains(warn["target"].(string), r.where) || warn["error"] == "" || warn["effect"] == "" {
		t.Errorf("the warning: %v", warn)
	}
	ready := readiness(t, p.pub)
	check := map[string]string{"live database": "liveDatabase", "sandbox database": "testDatabase", "Redis": "redis"}[down]
	if ready.Status != "degraded" || ready.Checks[check] != "unavailable" {
		t.Errorf("readyz with the %s down: %+v", down, ready)
	}
	want := map[invoicing.Mode]int{invoicing.Live: 200, invoicing.Test: 200}
	switch down {
	case "live database":
		want[invoicing.Live] = 503
	case "sandbox database":
		want[invoicing.Test] = 503
	case "Redis":
		want = map[invoicing.Mode]int{invoicing.Live: 503, invoicing.Test: 503}
	}
	for m, status := range want {
		st, _, body := call(t, http.MethodGet, p.pub+"/api/v1/v1/clients?pageSize=1", r.secret[m], gendata.DemoCompanyA, "", nil)
		code := map[string]string{"live database": "database_unavailable", "sandbox database": "database_unavailable", "Redis": "authentication_unavailable"}[down]
		if st != status || (status == 503 && !strings.Contains(string(body), code)) {
			t.Errorf("%s key with the %s down: %d %s, want %d", m, down, st, body, status)
		}
	}
}

// checkRecovered: once the dependency is up, the process says so and
// serves both modes, ready, with no restart; everything it logged is JSON:
// go-redis's own lines ("redis: connection pool: failed to dial ...") go
// into the log at debug level, not raw onto stderr.
func checkRecovered(t *testing.T, p *process, r *degradedRig, down string) {
	t.Helper()
	rec := p.waitLog(t, func(m map[string]any) bool { return m["msg"] == "dependency recovered" })
	if rec["dependency"] != down || rec["level"] != "INFO" {
		t.Errorf("recovery line: %v", rec)
	}
	for _, m := range invoicing.Modes {
		testenv.Eventually(t, string(m)+" requests answered again", func() error {
			st, _, body := call(t, http.MethodGet, p.pub+"/api/v1/v1/clients?pageSize=1", r.secret[m], gendata.DemoCompanyA, "", nil)
			return testenv.Want(st, 200, string(body))
		})
	}
	if ready := readiness(t, p.pub); ready.Status != "ready" {
		t.Errorf("readyz after recovery: %+v", ready)
	}
	for drained := false; !drained; {
		select {
		case l := <-p.stderrLines:
			p.seen = append(p.seen, l)
		default:
			drained = true
		}
	}
	for _, l := range p.seen {
		if !json.Valid([]byte(l)) {
			t.Errorf("a line that is not JSON on the gateway's stderr: %s", l)
		}
	}
}

// checkResealedOnceRedisAnswers: with Redis down at start, the signing
// secrets are sealed again once Redis answers, and said so; never a
// warning to run the reseal, which would point at the wrong fix while the
// outage is the cause.
func checkResealedOnceRedisAnswers(t *testing.T, p *process) {
	t.Helper()
	resealed := func(m map[string]any) bool {
		msg, _ := m["msg"].(string)
		return strings.HasPrefix(msg, "webhook signing secrets read once Redis answered")
	}
	check := func() (seen bool) {
		for _, l := range p.seen {
			var m map[string]any
			seen = seen || (json.Unmarshal([]byte(l), &m) == nil && resealed(m))
			if strings.Contains(l, "webhooks reseal") {
				t.Fatalf("with Redis down at start: %s", l)
			}
		}
		return seen
	}
	if !check() {
		p.waitLog(t, resealed)
		check()
	}
}

type readyBody struct {
	Status string
	Checks map[string]string
}

func readiness(t *testing.T, base string) readyBody {
	t.Helper()
	st, _, body := call(t, http.MethodGet, base+"/readyz", "", "", "", nil)
	var r readyBody
	if err := json.Unmarshal(body, &r); err != nil || st != 200 {
		t.Fatalf("readyz: %d %s", st, body)
	}
	return r
}

// waitLog returns the first log line of p (from its start on) that match
// accepts, or fails the test after a generous minute.
func (p *process) waitLog(t *testing.T, match func(map[string]any) bool) map[string]any {
	t.Helper()
	deadline := time.After(time.Minute)
	for {
		select {
		case l := <-p.stderrLines:
			p.seen = append(p.seen, l)
			var m map[string]any
			if json.Unmarshal([]byte(l), &m) == nil && match(m) {
				return m
			}
		case <-deadline:
			t.Fatal("the awaited log line did not come within a minute")
			return nil
		}
	}
}
