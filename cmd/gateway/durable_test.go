package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/invoicing-ao/gateway/backend/gendata"
	"github.com/invoicing-ao/gateway/internal/testenv"
)

// TestChangesConfirmedByReplicas runs the command line and the admin API,
// wired by the binary with redisMinReplicas 1, against a real Redis master
// and replica under a Sentinel. Changes made with the replica in sync are
// reported done and survive a failover that loses everything the master
// had not sent; changes made while the replica is held back are reported
// as not done (exit 1, 503 change_not_replicated) and never printed as
// done, and the failover indeed loses them.
func TestChangesConfirmedByReplicas(t *testing.T) {
	r := testenv.RedisReplicated(t)
	ctx := context.Background()
	live, test := testenv.Postgres(t), testenv.Postgres(t)
	if _, err := gendata.SetUpSmall(ctx, live, test, 3); err != nil {
		t.Fatal(err)
	}
	base := map[string]string{
		"GATEWAY_REDIS_URL":          "redis+sentinel://" + r.Sentinel + "/0?master_name=" + r.Name,
		"GATEWAY_LIVE_DATABASE_URL":  live,
		"GATEWAY_TEST_DATABASE_URL":  test,
		"GATEWAY_ADMIN_TOKEN":        "durable-test-admin-token",
		"GATEWAY_REDIS_MIN_REPLICAS": "1",
		// Long enough for a replica that keeps up on a busy machine.
		"GATEWAY_REDIS_REPLICA_TIMEOUT": "3s",
	}
	with := func(set map[string]string) func(string) string {
		m := maps.Clone(base)
		maps.Copy(m, set)
		return envOf(m)
	}
	sure := envOf(base)
	// Gives up soon on a replica held back for good.
	quick := with(map[string]string{"GATEWAY_REDIS_REPLICA_TIMEOUT": "200ms"})
	co := gendata.DemoCompanyA
	create := func(env func(string) string, name string) (id, secret string) {
		t.Helper()
		code, out, errs := gw(t, env, "keys", "create", "--company", co, "--mode", "LIVE", "--scopes", "clients:read", "--name", name, "--json")
		var k struct{ ID, Key string }
		if code != 0 || json.Unmarshal([]byte(out), &k) != nil || k.Key == "" {
			t.Fatalf("create %s: %d %s %s", name, code, out, errs)
		}
		return k.ID, k.Key
	}

	revokedID, revokedKey := create(sure, "revoked")
	heldID, heldKey := create(sure, "revoke-held-back")
	adminID, adminKey := create(sure, "admin-revoke-held-back")
	rolledID, rolledKey := create(sure, "rolled")
	if code, _, errs := gw(t, sure, "keys", "revoke", revokedID); code != 0 {
		t.Fatalf("revoke, replica in sync: %d %s", code, errs)
	}
	code, out, errs := gw(t, sure, "keys", "roll", rolledID, "--json")
	var rolled struct{ ID, Key string }
	if code != 0 || json.Unmarshal([]byte(out), &rolled) != nil || rolled.Key == "" {
		t.Fatalf("roll, replica in sync: %d %s %s", code, out, errs)
	}
	if code, _, errs := gw(t, sure, "limits", "set", "--company", co, "--mode", "LIVE", "--rps", "3", "--burst", "4"); code != 0 {
		t.Fatalf("limits set, replica in sync: %d %s", code, errs)
	}

	r.Link.Pause()
	for _, c := range []struct {
		args []string
		want string // in the message
	}{
		{[]string{"keys", "revoke", heldID}, "revoke it again"},
		{[]string{"keys", "create", "--company", co, "--mode", "LIVE", "--scopes", "clients:read", "--name", "unconfirmed"}, "no secret issued"},
		{[]string{"keys", "roll", rolled.ID}, "no secret issued"},
		{[]string{"limits", "set", "--company", co, "--mode", "LIVE", "--rps", "1", "--burst", "1"}, "make the change again"},
		{[]string{"limits", "reset", "--company", co}, "make the change again"},
	} {
		code, out, errs := gw(t, quick, c.args...)
		// A key's hint (igw_live_…Ab3d) may be logged with the audit event
		// a revocation could not confirm; a secret never.
		if code != 1 || out != "" || !strings.Contains(errs, c.want) || regexp.MustCompile(`igw_live_[0-9A-Za-z]{8}`).MatchString(errs) {
			t.Errorf("%v, replica held back: exit %d, stdout %q, stderr %q; want exit 1, nothing on stdout, a message saying %q", c.args, code, out, errs, c.want)
		}
	}
	// The admin API answers 503 change_not_replicated, with Retry-After.
	d, err := connect(ctx, mustConfig(t, quick), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	adminSrv := httptest.NewServer(d.admin.Handler(d.server))
	t.Cleanup(adminSrv.Close)
	req, _ := http.NewRequest(http.MethodDelete, adminSrv.URL+"/admin/v1/keys/"+adminID, nil)
	req.Header.Set("Authorization", "Bearer "+base["GATEWAY_ADMIN_TOKEN"])
	req.Header.Set("X-Actor", "ana@platform")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	var problem struct{ Code, Detail string }
	_ = json.Unmarshal(body, &problem)
	if res.StatusCode != http.StatusServiceUnavailable || problem.Code != "change_not_replicated" || res.Header.Get("Retry-After") == "" ||
		!strings.Contains(problem.Detail, "Revoke it again") {
		t.Errorf("admin revoke, replica held back: %d %s (Retry-After %q)", res.StatusCode, body, res.Header.Get("Retry-After"))
	}

	r.Failover()
	after := with(map[string]string{"GATEWAY_REDIS_MIN_REPLICAS": "0"})
	fresh, err := connect(ctx, mustConfig(t, after), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fresh.Close)
	pub := httptest.NewServer(fresh.server.Handler())
	t.Cleanup(pub.Close)
	for _, k := range []struct {
		name, secret string
		want         int
	}{
		{"revoked, confirmed", revokedKey, http.StatusUnauthorized},
		{"rolled, in its overlap", rolledKey, http.StatusOK},
		{"roll's successor, confirmed", rolled.Key, http.StatusOK},
		// Reported not done, and lost: the answers were right not to say
		// otherwise.
		{"revocation held back (command line)", heldKey, http.StatusOK},
		{"revocation held back (admin API)", adminKey, http.StatusOK},
	} {
		req, _ := http.NewRequest(http.MethodGet, pub.URL+"/api/v1/v1/clients?pageSize=1", nil)
		req.Header.Set("Authorization", "Bearer "+k.secret)
		req.Header.Set("X-Company-Id", co)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != k.want {
			t.Errorf("after the failover, key %s: %d, want %d", k.name, res.StatusCode, k.want)
		}
	}
	code, out, errs = gw(t, after, "limits", "get", "--company", co, "--json")
	var limits struct {
		Live struct {
			Rate   float64
			Burst  int
			Custom bool
		}
	}
	if code != 0 || json.Unmarshal([]byte(out), &limits) != nil || limits.Live.Rate != 3 || limits.Live.Burst != 4 || !limits.Live.Custom {
		t.Errorf("after the failover, limits: %d %s %s; want the confirmed 3/s burst 4", code, out, errs)
	}
	code, out, errs = gw(t, after, "audit", "--company", co, "--json")
	var a struct {
		Events []struct{ Action string } `json:"data"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &a) != nil {
		t.Fatalf("audit after the failover: %d %s %s", code, out, errs)
	}
	var actions []string
	for _, e := range a.Events {
		actions = append(actions, e.Action)
	}
	// The confirmed changes' events, in order; none of the others.
	want := "key.created key.created key.created key.created key.revoked key.rolled key.created limits.set"
	if strings.Join(actions, " ") != want {
		t.Errorf("audit after the failover: %v\nwant %s", actions, want)
	}
	// With no replica left, a change cannot be confirmed and is not said
	// to be done.
	if code, out, errs := gw(t, quick, "keys", "revoke", heldID); code != 1 || out != "" || !strings.Contains(errs, "revoke it again") {
		t.Errorf("revoke on a master without replicas: %d %q %q", code, out, errs)
	}
}

// mustConfig is the configuration of env and the shipped file.
func mustConfig(t *testing.T, env func(string) string) Config {
	t.Helper()
	cfg, err := loadConfig("../../configs/gateway.yaml", env)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestFewReplicasWarned: at start, a Redis master with fewer replicas than
// redisMinReplicas is named in a warning, before any change is refused.
func TestFewReplicasWarned(t *testing.T) {
	rdb, _ := testenv.Redis(t) // the tests' Redis has no replica
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	warnFewReplicas(context.Background(), rdb, 1, logger)
	if !strings.Contains(logs.String(), "fewer replicas than GATEWAY_REDIS_MIN_REPLICAS") || !strings.Contains(logs.String(), "replicas=0") {
		t.Errorf("no warning for a master without replicas: %q", logs.String())
	}
	logs.Reset()
	warnFewReplicas(context.Background(), rdb, 0, logger)
	if logs.Len() != 0 {
		t.Errorf("a warning without redisMinReplicas: %q", logs.String())
	}
}

// TestChangesConfirmedOnRedisCluster: the command line, wired by the binary
// with redisMinReplicas 1 on a Redis Cluster with a replica per master:
// each change waits on the master of every key it writes (the scripts and
// the transaction of a limits reset included) and succeeds, and the audit
// log, confirmed the same way, has every event.
func TestChangesConfirmedOnRedisCluster(t *testing.T) {
	c := testenv.RedisClusterReplicated(t)
	ctx := context.Background()
	live, test := testenv.Postgres(t), testenv.Postgres(t)
	if _, err := gendata.SetUpSmall(ctx, live, test, 3); err != nil {
		t.Fatal(err)
	}
	env := envOf(map[string]string{
		"GATEWAY_REDIS_URL":             "redis+cluster://" + c.Addrs[0] + "?addr=" + c.Addrs[1] + "&addr=" + c.Addrs[2],
		"GATEWAY_LIVE_DATABASE_URL":     live,
		"GATEWAY_TEST_DATABASE_URL":     test,
		"GATEWAY_REDIS_MIN_REPLICAS":    "1",
		"GATEWAY_REDIS_REPLICA_TIMEOUT": "3s",
	})
	co := gendata.DemoCompanyA
	code, out, errs := gw(t, env, "keys", "create", "--company", co, "--mode", "LIVE", "--scopes", "clients:read", "--json")
	var k struct{ ID string }
	if code != 0 || json.Unmarshal([]byte(out), &k) != nil {
		t.Fatalf("create: %d %s %s", code, out, errs)
	}
	code, out, errs = gw(t, env, "keys", "roll", k.ID, "--json")
	var r struct{ ID string }
	if code != 0 || json.Unmarshal([]byte(out), &r) != nil {
		t.Fatalf("roll: %d %s %s", code, out, errs)
	}
	for _, args := range [][]string{
		{"keys", "revoke", r.ID},
		{"limits", "set", "--company", co, "--rps", "3", "--burst", "4"},
		{"limits", "reset", "--company", co},
	} {
		if code, _, errs := gw(t, env, args...); code != 0 {
			t.Fatalf("%v: %d %s", args, code, errs)
		}
	}
	code, out, errs = gw(t, env, "audit", "--company", co, "--json")
	var a struct {
		Events []struct{ Action string } `json:"data"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &a) != nil {
		t.Fatalf("audit: %d %s %s", code, out, errs)
	}
	var actions []string
	for _, e := range a.Events {
		actions = append(actions, e.Action)
	}
	if want := "key.created key.rolled key.created key.revoked limits.set limits.reset"; strings.Join(actions, " ") != want {
		t.Errorf("audit: %v\nwant %s", actions, want)
	}
}
