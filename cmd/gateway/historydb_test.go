package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/invoicing-ao/gateway/audit"
	"github.com/invoicing-ao/gateway/authz"
	"github.com/invoicing-ao/gateway/backend/gendata"
	"github.com/invoicing-ao/gateway/internal/sqldb"
	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
)

// migratedDatabase is a gateway database of the test's own with this
// binary's migrations applied, and edit run on it then.
func migratedDatabase(t *testing.T, edit string, args ...any) string {
	t.Helper()
	ctx := context.Background()
	url := testenv.Postgres(t)
	db, err := sqldb.Open(ctx, sqldb.Config{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Apply(ctx, historyTracks()...); err != nil {
		t.Fatal(err)
	}
	if edit != "" {
		if _, err := db.Read().Exec(ctx, edit, args...); err != nil {
			t.Fatal(err)
		}
	}
	return url
}

// aheadDatabase is a gateway database migrated by a later binary: its
// audit track is at a version this one does not know.
func aheadDatabase(t *testing.T) string {
	return migratedDatabase(t, "INSERT INTO schema_migrations (track, version, name, applied_at, checksum) VALUES ('audit', 2, 'later', 0, 'x')")
}

// changedDatabase is a gateway database whose applied audit migration
// differs from this binary's (a build with an edited migration ran on it).
func changedDatabase(t *testing.T) string {
	return migratedDatabase(t, "UPDATE schema_migrations SET checksum = 'edited' WHERE track = 'audit' AND version = 1")
}

// writeOldAudit writes a company's audit stream as the previous layout
// kept it in Redis (prefix + "audit:{company}", entries "ms-k" with fields
// time, actor, action, key, after), and returns the entries' ids.
func writeOldAudit(t *testing.T, rdb redis.UniversalClient, prefix, company string, n int) []string {
	t.Helper()
	ctx := context.Background()
	at := time.Now().Add(-time.Hour).UnixMilli()
	var ids []string
	for i := range n {
		id := strconv.FormatInt(at+int64(i), 10) + "-0"
		err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: prefix + "audit:{" + company + "}", ID: id, Values: []any{
			"time", strconv.FormatInt(at+int64(i), 10), "actor", "ana@ops", "action", audit.ActionKeyCreated,
			"key", "key_aaaaaaaaaaaaaaaaaaa" + strconv.Itoa(i), "after", `{"name":"erp"}`}}).Err()
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

// createKeyIn makes a LIVE key of company A in the Redis of prefix, as a
// deployment that had it before its gateway database went down.
func createKeyIn(t *testing.T, rdb redis.UniversalClient, prefix string) string {
	t.Helper()
	keys := authz.New(authz.Config{Redis: rdb, Prefix: prefix + "authz:", NoPubSub: true})
	defer keys.Close()
	scopes, _ := authz.ParseScopes("clients:read")
	_, secret, err := keys.Create(context.Background(), authz.NewKey{CompanyID: gendata.DemoCompanyA, Mode: invoicing.Live, Scopes: scopes, Name: "erp"})
	if err != nil {
		t.Fatal(err)
	}
	return secret
}

// `gateway history status` says where a database is and changes nothing;
// `gateway history migrate` applies what it lacks, once, and copies the
// audit log the previous version kept in Redis, leaving nothing of it
// there; both refuse a database ahead of the binary or migrated otherwise.
func TestHistoryCommands(t *testing.T) {
	t.Parallel()
	rdb, prefix := testenv.Redis(t)
	gatewayDB := testenv.Postgres(t)
	env := envOf(map[string]string{"GATEWAY_REDIS_URL": testenv.RedisURL(), "GATEWAY_REDIS_PREFIX": prefix, "GATEWAY_HISTORY_DATABASE_URL": gatewayDB})
	code, out, errs := runCLI(env, "history", "status")
	if code != 0 || !strings.Contains(out, "audit  ") || !strings.Contains(out, "version 0 of 1") ||
		!strings.Contains(out, "to apply: audit 1 (audit heads and entries)") || !strings.Contains(out, "gateway history migrate applies them") {
		t.Fatalf("status of an empty database: %d\n%s%s", code, out, errs)
	}
	if code, out, _ := runCLI(env, "history", "status"); code != 0 || !strings.Contains(out, "version 0 of 1") {
		t.Errorf("status changed the database: %s", out)
	}
	ids := writeOldAudit(t, rdb, prefix, gendata.DemoCompanyA, 3)
	code, out, errs = runCLI(env, "history", "migrate")
	if code != 0 || !strings.Contains(out, "Applied 2 migrations to the gateway's database") || !strings.Contains(out, "audit 1 (audit heads and entries)") ||
		!strings.Contains(out, "Copied 3 audit entries of 1 company from Redis") {
		t.Fatalf("migrate: %d\n%s%s", code, out, errs)
	}
	if keys := rdb.Keys(context.Background(), prefix+"audit:*").Val(); len(keys) != 0 {
		t.Errorf("audit keys left in Redis after the upgrade: %v", keys)
	}
	code, out, errs = runCLI(env, "history", "migrate", "--json")
	var m struct {
		Applied []any
		Tracks  []struct {
			Track           string
			Applied, Latest int
		}
		FromRedis struct{ Companies int } `json:"auditFromRedis"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &m) != nil || len(m.Applied) != 0 || len(m.Tracks) != 2 || m.Tracks[0].Applied != 1 || m.FromRedis.Companies != 0 {
		t.Errorf("migrate again: %d %s %s", code, out, errs)
	}
	if code, out, _ := runCLI(env, "history", "status"); code != 0 || strings.Contains(out, "to apply") || !strings.Contains(out, "version 1 of 1") {
		t.Errorf("status once migrated: %s", out)
	}
	// The copied entries are the log's, with their ids.
	code, out, errs = runCLI(envOf(map[string]string{"GATEWAY_REDIS_URL": testenv.RedisURL(), "GATEWAY_REDIS_PREFIX": prefix,
		"GATEWAY_HISTORY_DATABASE_URL": gatewayDB, "GATEWAY_LIVE_DATABASE_URL": "sqlite:" + t.TempDir() + "/none.db"}),
		"audit", "--company", gendata.DemoCompanyA, "--json")
	for _, id := range ids {
		if code != 0 || !strings.Contains(out, `"id":"`+id+`"`) {
			t.Errorf("audit after the upgrade lacks %s: %d %s %s", id, code, out, errs)
		}
	}
	for name, url := range map[string]string{"ahead": aheadDatabase(t), "changed": changedDatabase(t)} {
		bad := envOf(map[string]string{"GATEWAY_REDIS_URL": testenv.RedisURL(), "GATEWAY_REDIS_PREFIX": prefix, "GATEWAY_HISTORY_DATABASE_URL": url})
		want := map[string]string{"ahead": "this binary is older than the database's schema", "changed": "restore the database from its backup"}[name]
		for _, cmd := range []string{"status", "migrate"} {
			code, out, errs := runCLI(bad, "history", cmd)
			if code != 1 || out != "" || !strings.Contains(errs, "GATEWAY_HISTORY_DATABASE_URL (historyDatabaseURL)") || !strings.Contains(errs, want) {
				t.Errorf("history %s of a database %s: %d %q %q", cmd, name, code, out, errs)
			}
		}
	}
	if code, _, errs := runCLI(env, "history", "migrate", "--force"); code != 2 || !strings.Contains(errs, "usage: gateway history migrate [--json]") {
		t.Errorf("a wrong flag: %d %q", code, errs)
	}
}

// `gateway serve` with its gateway database down at start serves the API,
// says what is down and what is answered meanwhile, refuses admin changes
// before making them, and once the database answers applies its
// migrations and copies the previous layout's audit log from Redis (none
// of it left there), with no restart.
func TestServeWithTheGatewayDatabaseDown(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	ctx := context.Background()
	live, test := testenv.Postgres(t), testenv.Postgres(t)
	if _, err := gendata.SetUpSmall(ctx, live, test, 5); err != nil {
		t.Fatal(err)
	}
	rdb, prefix := testenv.Redis(t)
	ids := writeOldAudit(t, rdb, prefix, gendata.DemoCompanyA, 2)
	proxy := testenv.PostgresProxy(t)
	proxy.Cut()
	p := startProcess(t, bin, []string{
		"GATEWAY_ADDR=127.0.0.1:0", "GATEWAY_ADMIN_ADDR=127.0.0.1:0", "GATEWAY_REDIS_URL=" + testenv.RedisURL(),
		"GATEWAY_REDIS_PREFIX=" + prefix, "GATEWAY_LIVE_DATABASE_URL=" + live, "GATEWAY_TEST_DATABASE_URL=" + test,
		"GATEWAY_HISTORY_DATABASE_URL=" + proxy.Via(testenv.Postgres(t)), "GATEWAY_ADMIN_TOKEN=" + testAdminToken,
		"GATEWAY_DRAIN_DELAY=0s", "GATEWAY_EVENTS_RUN=false",
	})
	warn := p.waitLog(t, func(m map[string]any) bool {
		return m["msg"] == "dependency unavailable; serving without it until it answers" && m["dependency"] == "gateway database"
	})
	if s, _ := warn["setting"].(string); !strings.Contains(s, "GATEWAY_HISTORY_DATABASE_URL") || !strings.Contains(warn["target"].(string), proxy.Addr()) ||
		!strings.Contains(warn["effect"].(string), "audit_unavailable") {
		t.Errorf("the warning: %v", warn)
	}
	if r := readiness(t, p.pub); r.Status != "degraded" || r.Checks["historyDatabase"] != "unavailable" || r.Checks["liveDatabase"] != "ok" {
		t.Errorf("readyz with the gateway database down: %+v", r)
	}
	admin := func(method, path, body string) (int, []byte) {
		st, _, b := call(t, method, p.admin+path, testAdminToken, "", body, map[string]string{"X-Actor": "ops@test"})
		return st, b
	}
	limit := `{"mode":"LIVE","rate":7,"burst":7}`
	if st, b := admin(http.MethodPut, "/admin/v1/companies/"+gendata.DemoCompanyA+"/limits", limit); st != 503 || !strings.Contains(string(b), "audit_unavailable") {
		t.Errorf("a change while the gateway database is down: %d %s", st, b)
	}
	if st, b := admin(http.MethodGet, "/admin/v1/companies/"+gendata.DemoCompanyA+"/limits", ""); st != 200 || strings.Contains(string(b), `"rate":7`) {
		t.Errorf("the refused change was made: %d %s", st, b)
	}
	key := createKeyIn(t, rdb, prefix)
	if st, _, b := call(t, http.MethodGet, p.pub+"/api/v1/v1/clients?pageSize=1", key, gendata.DemoCompanyA, "", nil); st != 200 {
		t.Errorf("the API with the gateway database down: %d %s", st, b)
	}

	proxy.Resume()
	migratedLine := p.waitLog(t, func(m map[string]any) bool { return m["msg"] == "gateway database migrated" })
	if a, _ := migratedLine["applied"].([]any); len(a) != 2 {
		t.Errorf("the migrations applied: %v", migratedLine)
	}
	copied := p.waitLog(t, func(m map[string]any) bool {
		return strings.HasPrefix(m["msg"].(string), "audit log copied from Redis")
	})
	if copied["copied"] != float64(2) || copied["companies"] != float64(1) {
		t.Errorf("the copy: %v", copied)
	}
	if keys := rdb.Keys(ctx, prefix+"audit:*").Val(); len(keys) != 0 {
		t.Errorf("audit keys left in Redis: %v", keys)
	}
	testenv.Eventually(t, "changes made again", func() error {
		st, b := admin(http.MethodPut, "/admin/v1/companies/"+gendata.DemoCompanyA+"/limits", limit)
		return testenv.Want(st, 200, string(b))
	})
	st, b := admin(http.MethodGet, "/admin/v1/companies/"+gendata.DemoCompanyA+"/audit", "")
	for _, want := range append(ids, "limits.set") {
		if st != 200 || !strings.Contains(string(b), want) {
			t.Errorf("the audit log lacks %s: %d %s", want, st, b)
		}
	}
	if r := readiness(t, p.pub); r.Status != "ready" || r.Checks["historyDatabase"] != "ok" {
		t.Errorf("readyz once migrated: %+v", r)
	}
}

// `gateway serve` on a gateway database ahead of the binary, or migrated
// otherwise, does not start: it says which setting, which database, and
// what to do.
func TestServeRefusesTheGatewayDatabase(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	for name, url := range map[string]string{"ahead": aheadDatabase(t), "changed": changedDatabase(t)} {
		cmd := exec.Command(bin, "serve", "--config", "../../configs/gateway.yaml")
		cmd.Env = withSecretsKey([]string{"GATEWAY_ADDR=127.0.0.1:0", "GATEWAY_ADMIN_ADDR=127.0.0.1:0",
			"GATEWAY_REDIS_URL=" + testenv.RedisURL(), "GATEWAY_LIVE_DATABASE_URL=" + testenv.Postgres(t),
			"GATEWAY_TEST_DATABASE_URL=" + testenv.Postgres(t), "GATEWAY_HISTORY_DATABASE_URL=" + url, "PATH=/usr/bin:/bin"})
		out, err := cmd.CombinedOutput()
		want := map[string]string{"ahead": "track audit is at version 2, this binary knows up to 1", "changed": "was applied with checksum"}[name]
		if code := cmd.ProcessState.ExitCode(); err == nil || code != 1 || !strings.Contains(string(out), "the gateway's database (setting GATEWAY_HISTORY_DATABASE_URL (historyDatabaseURL)") ||
			!strings.Contains(string(out), want) {
			t.Errorf("serve on a database %s: exit %d\n%s", name, code, out)
		}
	}
}
