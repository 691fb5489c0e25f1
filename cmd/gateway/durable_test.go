package main

import (
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
	"github.com/invoicing-ao/gateway/cmd/gateway/internal/config"
	"github.com/invoicing-ao/gateway/internal/testenv"
)

// TestChangesConfirmedByReplicas runs the command line and the admin API,
// wired by the binary on the shipped configuration (redisMinReplicas
// auto), against a real Redis master and replica under a Sentinel: no
// setting is needed for every change to wait for the replica. Changes made
// with the replica in sync are reported done; made while it is held back,
// they are reported as not done (exit 1 and one sentence, 503
// change_not_replicated) and never printed as done; repeated once it is
// back, each succeeds and makes one change, not two; and a failover keeps
// every change reported done and loses the ones reported unconfirmed.
func TestChangesConfirmedByReplicas(t *testing.T) {
	t.Parallel()
	r := testenv.RedisReplicated(t)
	ctx := context.Background()
	rig := newReplicaRig(t, r)
	base, sure, quick := rig.base, rig.sure, rig.quick
	co := gendata.DemoCompanyA
	key, endpoint := rig.key, rig.endpoint

	revoked, held, adminHeld, rolled, lost := key(sure, "revoked"), key(sure, "revoke-held-back"), key(sure, "admin-revoke-held-back"), key(sure, "rolled"), key(sure, "lost")
	whDeleted, whAdmin, whLost := endpoint(sure, "deleted"), endpoint(sure, "admin-deleted"), endpoint(sure, "lost")
	if code, _, errs := gw(t, sure, "keys", "revoke", revoked.ID); code != 0 {
		t.Fatalf("revoke, replica in sync: %d %s", code, errs)
	}
	var successor created
	rig.json(sure, "roll, replica in sync", &successor, "keys", "roll", rolled.ID)
	if code, _, errs := gw(t, sure, "limits", "set", "--company", co, "--mode", "LIVE", "--rps", "3", "--burst", "4"); code != 0 {
		t.Fatalf("limits set, replica in sync: %d %s", code, errs)
	}

	r.Link.Pause()
	heldBack := changeHeldBack(t, quick, co, held.ID, successor.ID, whLost.ID, whDeleted.ID)
	// The admin API answers 503 change_not_replicated, with Retry-After.
	d, err := connect(ctx, mustConfig(t, quick), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	adminSrv := httptest.NewServer(d.adminHandler())
	t.Cleanup(adminSrv.Close)
	for _, c := range []struct{ method, path, body, want string }{
		{http.MethodDelete, "/admin/v1/keys/" + adminHeld.ID, "", "revoke it again"},
		{http.MethodDelete, "/admin/v1/webhooks/" + whAdmin.ID, "", "may or may not have applied"},
		{http.MethodPost, "/admin/v1/companies/" + co + "/webhooks", `{"mode":"LIVE","url":"http://127.0.0.1:9/admin-unconfirmed"}`, "taken back"},
	} {
		expectUnconfirmedAnswer(t, adminSrv.URL, base["GATEWAY_ADMIN_TOKEN"], c.method, c.path, c.body, c.want)
	}

	// Repeated once the replica is back, every change succeeds, and makes
	// one change: one key and one endpoint of those the replica did not
	// confirm, the revocations and the deletions confirmed.
	r.Link.Resume()
	for _, args := range append(heldBack, []string{"keys", "revoke", adminHeld.ID}, []string{"webhooks", "delete", whAdmin.ID}) {
		if code, _, errs := gw(t, quick, args...); code != 0 {
			t.Errorf("%v again, replica back: exit %d, %s", args, code, errs)
		}
	}
	expectOnce(t, sure, co)
	// Held back again: a revocation and a deletion reported unconfirmed,
	// then the failover.
	r.Synced()
	r.Link.Pause()
	expectUnconfirmed(t, quick, "keys", "revoke", lost.ID)
	expectUnconfirmed(t, quick, "webhooks", "delete", whLost.ID)
	r.Failover()
	after := rig.with(map[string]string{"GATEWAY_REDIS_MIN_REPLICAS": "0"}) // the promoted master is alone
	expectKeys(t, after, co, map[string]int{
		"revoked, confirmed":                   http.StatusUnauthorized,
		"revoked when repeated (command line)": http.StatusUnauthorized,
		"revoked when repeated (admin API)":    http.StatusUnauthorized,
		"roll's successor, rolled again":       http.StatusOK, // in its overlap
		// Reported not done, and lost: the answer was right not to say
		// otherwise.
		"revocation held back, then lost": http.StatusOK,
	}, map[string]string{
		"revoked, confirmed":                   revoked.Key,
		"revoked when repeated (command line)": held.Key,
		"revoked when repeated (admin API)":    adminHeld.Key,
		"roll's successor, rolled again":       successor.Key,
		"revocation held back, then lost":      lost.Key,
	})
	code, out, errs := gw(t, after, "webhooks", "list", "--company", co, "--json")
	if code != 0 || !strings.Contains(out, whLost.ID) || strings.Contains(out, whDeleted.ID) || strings.Contains(out, whAdmin.ID) {
		t.Errorf("endpoints after the failover: %d %s %s; want %s back (its deletion unconfirmed), %s and %s gone", code, out, errs, whLost.ID, whDeleted.ID, whAdmin.ID)
	}
	// With no replica left, a change cannot be confirmed and is not said
	// to be done.
	expectUnconfirmed(t, quick, "keys", "revoke", lost.ID)
}

// changeHeldBack makes a change of each kind while the replica is held
// back (a revocation, a creation and a roll of keys, limits set and reset,
// an endpoint created, updated and deleted), each reported unconfirmed, and
// returns their command lines.
func changeHeldBack(t *testing.T, env func(string) string, co, revoke, roll, update, del string) [][]string {
	t.Helper()
	heldBack := [][]string{
		{"keys", "revoke", revoke},
		{"keys", "create", "--company", co, "--mode", "LIVE", "--scopes", "clients:read", "--name", "unconfirmed"},
		{"keys", "roll", roll},
		{"limits", "set", "--company", co, "--mode", "LIVE", "--rps", "5", "--burst", "6"},
		{"limits", "reset", "--company", co},
		{"webhooks", "create", "--company", co, "--mode", "LIVE", "--url", "http://127.0.0.1:9/unconfirmed", "--description", "unconfirmed"},
		{"webhooks", "update", update, "--description", "changed while held back"},
		{"webhooks", "delete", del},
	}
	for _, args := range heldBack {
		expectUnconfirmed(t, env, args...)
	}
	return heldBack
}

// replicaRig is the databases and environments of the replicated tests:
// sure waits long enough for a replica that keeps up on a busy machine,
// quick gives up soon on a replica held back for good.
type replicaRig struct {
	t           *testing.T
	base        map[string]string
	sure, quick func(string) string
}

// created is what the replicated tests read of a key or an endpoint created.
type created struct{ ID, Key, Secret string }

func newReplicaRig(t *testing.T, r *testenv.ReplicatedRedis) *replicaRig {
	t.Helper()
	live, test := testenv.Postgres(t), testenv.Postgres(t)
	if _, err := gendata.SetUpSmall(context.Background(), live, test, 3); err != nil {
		t.Fatal(err)
	}
	base := map[string]string{
		"GATEWAY_REDIS_URL":            "redis+sentinel://" + r.Sentinel + "/0?master_name=" + r.Name,
		"GATEWAY_LIVE_DATABASE_URL":    live,
		"GATEWAY_TEST_DATABASE_URL":    test,
		"GATEWAY_HISTORY_DATABASE_URL": testenv.Postgres(t),
		"GATEWAY_ADMIN_TOKEN":          testAdminToken,
		// Long enough for a replica that keeps up on a busy machine.
		"GATEWAY_REDIS_REPLICA_TIMEOUT": "3s",
		// Webhook endpoints on this machine.
		"GATEWAY_EVENTS_ALLOW_HTTP": "true", "GATEWAY_EVENTS_ALLOWED_NETWORKS": "127.0.0.0/8",
	}
	rig := &replicaRig{t: t, base: base, sure: envOf(base)}
	rig.quick = rig.with(map[string]string{"GATEWAY_REDIS_REPLICA_TIMEOUT": "200ms"})
	return rig
}

// with is the base environment with set's variables.
func (rig *replicaRig) with(set map[string]string) func(string) string {
	m := maps.Clone(rig.base)
	maps.Copy(m, set)
	return envOf(m)
}

// json runs a command with --json and reads its answer into v.
func (rig *replicaRig) json(env func(string) string, what string, v any, args ...string) {
	rig.t.Helper()
	code, out, errs := gw(rig.t, env, append(args, "--json")...)
	if code != 0 || json.Unmarshal([]byte(out), v) != nil {
		rig.t.Fatalf("%s: %d %s %s", what, code, out, errs)
	}
}

// key creates a LIVE key of the demo's company A.
func (rig *replicaRig) key(env func(string) string, name string) (k created) {
	rig.t.Helper()
	rig.json(env, "create key "+name, &k, "keys", "create", "--company", gendata.DemoCompanyA, "--mode", "LIVE", "--scopes", "clients:read", "--name", name)
	return k
}

// endpoint creates a LIVE webhook endpoint of the demo's company A.
func (rig *replicaRig) endpoint(env func(string) string, name string) (e created) {
	rig.t.Helper()
	rig.json(env, "create endpoint "+name, &e, "webhooks", "create", "--company", gendata.DemoCompanyA, "--mode", "LIVE", "--url", "http://127.0.0.1:9/"+name, "--description", name)
	return e
}

// expectUnconfirmed runs a change whose replicas cannot confirm it: exit 1,
// nothing on stdout, and one sentence that says what became of it and to
// repeat it once Redis is healthy, never a secret.
func expectUnconfirmed(t *testing.T, env func(string) string, args ...string) {
	t.Helper()
	code, out, errs := gw(t, env, args...)
	said := strings.TrimPrefix(strings.TrimSpace(errs), "gateway: ")
	if code != 1 || out != "" || strings.Contains(said, "\n") || strings.Contains(said, ". ") || !strings.HasSuffix(said, ".") || !strings.Contains(said, "once Redis is healthy") ||
		!(strings.Contains(said, "may or may not have applied") || strings.Contains(said, "taken back")) ||
		regexp.MustCompile(`igw_live_[0-9A-Za-z]{8}|whsec_`).MatchString(errs) {
		t.Errorf("%v, replica held back: exit %d, stdout %q, stderr %q; want exit 1, nothing on stdout, one sentence saying it may or may not have applied (or was taken back) and to repeat it once Redis is healthy", args, code, out, errs)
	}
}

// expectUnconfirmedAnswer sends an admin API change whose replicas cannot
// confirm it: 503 change_not_replicated with Retry-After, its detail
// saying want.
func expectUnconfirmedAnswer(t *testing.T, base, token, method, path, body, want string) {
	t.Helper()
	req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("X-Actor", "ana@platform")
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	var problem struct{ Code, Detail string }
	_ = json.Unmarshal(b, &problem)
	if res.StatusCode != http.StatusServiceUnavailable || problem.Code != "change_not_replicated" || res.Header.Get("Retry-After") == "" ||
		!strings.Contains(problem.Detail, want) || strings.Contains(string(b), "whsec_") {
		t.Errorf("%s %s, replica held back: %d %s (Retry-After %q); want 503 change_not_replicated saying %q", method, path, res.StatusCode, b, res.Header.Get("Retry-After"), want)
	}
}

// expectOnce: the changes repeated after being reported unconfirmed made
// one key named "unconfirmed" and one endpoint described so, and the
// audit log records each once.
func expectOnce(t *testing.T, env func(string) string, co string) {
	t.Helper()
	_, out, _ := gw(t, env, "keys", "list", "--company", co, "--json")
	var keys []struct{ Name, State string }
	_ = json.Unmarshal([]byte(out), &keys)
	n := 0
	for _, k := range keys {
		if k.Name == "unconfirmed" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("keys named unconfirmed after the repeated creation: %d, want 1", n)
	}
	_, out, _ = gw(t, env, "webhooks", "list", "--company", co, "--json")
	if got := strings.Count(out, `"description":"unconfirmed"`); got != 1 {
		t.Errorf("endpoints described unconfirmed after the repeated creation: %d, want 1\n%s", got, out)
	}
	_, out, _ = gw(t, env, "audit", "--company", co, "--json")
	var a struct {
		Events []struct{ Action, KeyID, WebhookID string } `json:"data"`
	}
	_ = json.Unmarshal([]byte(out), &a)
	counts := map[string]int{}
	for _, e := range a.Events {
		counts[e.Action+" "+e.KeyID+e.WebhookID]++
	}
	for what, n := range counts {
		if n > 1 && !strings.HasPrefix(what, "limits.") && !strings.HasPrefix(what, "webhook.updated") {
			t.Errorf("audit: %s recorded %d times", what, n)
		}
	}
}

// expectKeys asks the public API with each key and wants each status.
func expectKeys(t *testing.T, env func(string) string, co string, want map[string]int, secrets map[string]string) {
	t.Helper()
	d, err := connect(context.Background(), mustConfig(t, env), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	pub := httptest.NewServer(d.server.Handler())
	t.Cleanup(pub.Close)
	for name, status := range want {
		req, _ := http.NewRequest(http.MethodGet, pub.URL+"/api/v1/v1/clients?pageSize=1", nil)
		req.Header.Set("Authorization", "Bearer "+secrets[name])
		req.Header.Set("X-Company-Id", co)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != status {
			t.Errorf("after the failover, key %s: %d, want %d", name, res.StatusCode, status)
		}
	}
}

// mustConfig is the configuration of env and the shipped file.
func mustConfig(t *testing.T, env func(string) string) config.Config {
	t.Helper()
	cfg, err := config.Load("../../configs/gateway.yaml", env, config.NeedAll)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestChangesConfirmedOnRedisCluster: the command line, wired by the binary
// on a Redis Cluster with a replica per master and redisMinReplicas auto,
// finds the cluster replicated: each change waits for one replica on the
// master of every key it writes (the scripts and the transaction of a
// limits reset included) and succeeds, and the audit log, confirmed the
// same way, has every event (revoking the rolled key revokes the one it
// replaced too: two revocations).
func TestChangesConfirmedOnRedisCluster(t *testing.T) {
	t.Parallel()
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
		"GATEWAY_HISTORY_DATABASE_URL":  testenv.Postgres(t),
		"GATEWAY_REDIS_REPLICA_TIMEOUT": "3s",
	})
	d, err := connect(ctx, mustConfig(t, env), slog.New(slog.NewTextHandler(io.Discard, nil)), only(config.NeedRedis))
	if err != nil {
		t.Fatal(err)
	}
	n := d.guard.target.Replicas()
	d.Close()
	if n != 1 {
		t.Fatalf("on a cluster with replicas, changes wait for %d replicas, want 1", n)
	}
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
	if want := "key.created key.rolled key.created key.revoked key.revoked limits.set limits.reset"; strings.Join(actions, " ") != want {
		t.Errorf("audit: %v\nwant %s", actions, want)
	}
}
