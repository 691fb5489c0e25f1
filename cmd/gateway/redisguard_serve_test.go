package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"net/http"
	"strings"
	"testing"

	"github.com/invoicing-ao/gateway/internal/testenv"
)

// keepTestGC are settings that leave the garbage collector of the test
// process as it is when `gateway serve` runs in it (tuneGC changes only what
// the operator left unset): the parallel tests share that process.
var keepTestGC = map[string]string{"GOGC": "100", "GOMEMLIMIT": "off"}

// serveEnv is a configuration for `gateway serve` on redisURL, with this
// test's own (empty) databases, on free ports.
func serveEnv(t *testing.T, redisURL string, set map[string]string) func(string) string {
	m := map[string]string{
		"GATEWAY_REDIS_URL":            redisURL,
		"GATEWAY_LIVE_DATABASE_URL":    testenv.Postgres(t),
		"GATEWAY_TEST_DATABASE_URL":    testenv.Postgres(t),
		"GATEWAY_HISTORY_DATABASE_URL": testenv.Postgres(t),
		"GATEWAY_ADDR":                 "127.0.0.1:0", "GATEWAY_ADMIN_ADDR": "127.0.0.1:0", "GATEWAY_DRAIN_DELAY": "0s",
		"GATEWAY_EVENTS_RUN": "false",
	}
	maps.Copy(m, keepTestGC)
	maps.Copy(m, set)
	return envOf(m)
}

// startServe runs `gateway serve` until the test ends and returns its
// public address, read from its start-up line, and its log.
func startServe(t *testing.T, env func(string) string) (string, *testenv.SyncBuffer) {
	t.Helper()
	ctx, stop := context.WithCancel(context.Background())
	logs := &testenv.SyncBuffer{}
	var code int
	ended := make(chan struct{})
	go func() {
		code = run(ctx, []string{"serve", "--config", "../../configs/gateway.yaml"}, io.Discard, logs, env)
		close(ended)
	}()
	t.Cleanup(func() { stop(); <-ended })
	var public string
	testenv.Eventually(t, "serve's listening line", func() error {
		for _, line := range strings.Split(logs.String(), "\n") {
			var m struct{ Msg, Public string }
			if json.Unmarshal([]byte(line), &m) == nil && m.Msg == "gateway listening" {
				public = m.Public
				return nil
			}
		}
		select {
		case <-ended:
			t.Fatalf("serve ended with %d:\n%s", code, logs.String())
		default:
		}
		return errors.New("not yet")
	})
	return public, logs
}

// `gateway serve` refuses a Redis that may evict the control plane's
// records (allkeys-lru, as a cache is run) before it listens, naming the
// Redis setting and the gateway's; with redisAllowEviction it starts, and
// says so.
func TestServeRefusesEvictingRedis(t *testing.T) {
	t.Parallel()
	s := testenv.StartRedisServerWith(t, 0, "--appendonly", "yes", "--maxmemory", "64mb", "--maxmemory-policy", "allkeys-lru")
	env := serveEnv(t, "redis://"+s.Addr()+"/0", nil)
	code, _, errs := runCLI(env, "serve", "--config", "../../configs/gateway.yaml")
	for _, want := range []string{"maxmemory-policy allkeys-lru", "set maxmemory-policy noeviction", "redisAllowEviction: true (GATEWAY_REDIS_ALLOW_EVICTION=true)"} {
		if code != 1 || !strings.Contains(errs, want) {
			t.Errorf("serve on allkeys-lru: exit %d, stderr %q; want 1 and %q", code, errs, want)
		}
	}
	_, logs := startServe(t, serveEnv(t, "redis://"+s.Addr()+"/0", map[string]string{"GATEWAY_REDIS_ALLOW_EVICTION": "true"}))
	if !strings.Contains(logs.String(), "started anyway") {
		t.Errorf("allowed eviction not said at start:\n%s", logs.String())
	}
}

// `gateway serve` on a Redis that keeps nothing across a restart and has no
// replica starts, and names both in a warning, in /readyz's body and in
// `gateway probe`; on a Redis that hides its configuration (CONFIG renamed
// away, as managed Redis does), the same checks are unknown, said as such,
// and nothing fails.
func TestServeNamesRedisThatLosesState(t *testing.T) {
	t.Parallel()
	bare := testenv.StartRedisServer(t, 0)
	addr, logs := startServe(t, serveEnv(t, "redis://"+bare.Addr()+"/0", nil))
	for _, want := range []string{`"check":"persistence"`, "appendonly yes", `"check":"replicas"`, "Redis has no replica"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("start-up log does not say %q:\n%s", want, logs.String())
		}
	}
	body := readyz(t, addr)
	want := map[string]string{"persistence": "at_risk/none", "eviction": "ok/noeviction", "replicas": "at_risk/0"}
	for name, w := range want {
		if got := body[name].State + "/" + body[name].Value; got != w {
			t.Errorf("/readyz redisDurability.%s = %s, want %s", name, got, w)
		}
	}
	code, out, errs := runCLI(envOf(nil), "probe", "http://"+addr+"/readyz")
	for _, w := range []string{"ok\n", "redis persistence: at risk (none): a Redis restart empties it; set appendonly yes", "redis eviction: ok (noeviction)",
		"redis replicas: at risk (0)", "redis changes: done once the master has them"} {
		if code != 0 || !strings.Contains(out, w) {
			t.Errorf("probe: exit %d, %q %q; want %q", code, out, errs, w)
		}
	}

	hidden := testenv.StartRedisServerWith(t, 0, "--appendonly", "yes", "--rename-command", "CONFIG", "")
	addr, logs = startServe(t, serveEnv(t, "redis://"+hidden.Addr()+"/0", nil))
	if !strings.Contains(logs.String(), "Redis does not say what it allows") || strings.Contains(logs.String(), `"check":"persistence"`) {
		t.Errorf("start-up on a Redis without CONFIG:\n%s", logs.String())
	}
	body = readyz(t, addr)
	if body["persistence"].State != "unknown" || body["eviction"].State != "unknown" {
		t.Errorf("/readyz on a Redis without CONFIG: %+v", body)
	}
	if code, out, _ := runCLI(envOf(nil), "probe", "http://"+addr+"/readyz"); code != 0 || !strings.Contains(out, "redis persistence: unknown: Redis does not say") {
		t.Errorf("probe on a Redis without CONFIG: %d %q", code, out)
	}
}

type durabilityCheck struct{ State, Value string }

// readyz is the redisDurability of a gateway's /readyz, which answers 200.
func readyz(t *testing.T, addr string) map[string]durabilityCheck {
	t.Helper()
	res, err := http.Get("http://" + addr + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var body struct {
		Status     string
		Durability map[string]json.RawMessage `json:"redisDurability"`
	}
	if err := json.NewDecoder(res.Body).Decode(&body); err != nil || res.StatusCode != http.StatusOK || body.Status != "ready" {
		t.Fatalf("/readyz: %d %+v %v", res.StatusCode, body, err)
	}
	out := map[string]durabilityCheck{}
	for _, name := range []string{"persistence", "eviction", "replicas"} {
		var c durabilityCheck
		_ = json.Unmarshal(body.Durability[name], &c)
		out[name] = c
	}
	return out
}
