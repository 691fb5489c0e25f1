package main

import (
	"net/url"
	"strings"
	"testing"

	"github.com/invoicing-ao/gateway/backend/gendata"
	"github.com/invoicing-ao/gateway/internal/testenv"
)

// A failing command names the setting, the database or Redis, the host and
// the server's own words, never the API's public text, and says what to do
// next where that is known.
func TestErrorsNameTheCause(t *testing.T) {
	// Not parallel: the gateway runs in the test process, where its sub-second
	// Redis deadlines (a key's verification, a rate-limit decision) must not
	// compete with the parallel tests for the CPU.
	_, prefix := testenv.Redis(t)
	admin, err := url.Parse(testenv.PostgresAdminURL())
	if err != nil {
		t.Fatal(err)
	}
	missing := *admin
	missing.Path = "/" + testenv.Name("gwtest_missing_")
	empty := testenv.Postgres(t) // exists, no schema
	gatewayDB := testenv.Postgres(t)
	ahead := aheadDatabase(t)
	port := testenv.ClosedPort(t)
	testenv.QuietRedisLog(t, "127.0.0.1:"+port)
	create := []string{"keys", "create", "--company", gendata.DemoCompanyA, "--mode", "LIVE", "--scopes", "clients:read"}
	cases := []struct {
		name string
		env  map[string]string
		args []string
		want []string
	}{
		{"database does not exist", map[string]string{"GATEWAY_LIVE_DATABASE_URL": missing.String()}, create,
			[]string{"the live database", "GATEWAY_LIVE_DATABASE_URL", admin.Host, `database "` + missing.Path[1:] + `" does not exist`, "createdb -h " + admin.Hostname() + " -p " + admin.Port()}},
		{"no schema", map[string]string{"GATEWAY_LIVE_DATABASE_URL": empty}, create,
			[]string{`relation "companies" does not exist`, "gateway data schema"}},
		{"Redis refused", map[string]string{"GATEWAY_LIVE_DATABASE_URL": empty, "GATEWAY_REDIS_URL": "redis://127.0.0.1:" + port + "/0"}, create,
			[]string{"Redis", "GATEWAY_REDIS_URL", "127.0.0.1:" + port, "connection refused"}},
		{"Redis refused, Redis only", map[string]string{"GATEWAY_REDIS_URL": "redis://127.0.0.1:" + port + "/0"}, []string{"usage", "--company", gendata.DemoCompanyA},
			[]string{"GATEWAY_REDIS_URL", "127.0.0.1:" + port, "connection refused"}},
		{"the gateway's database does not exist", map[string]string{"GATEWAY_LIVE_DATABASE_URL": empty, "GATEWAY_HISTORY_DATABASE_URL": missing.String()}, create,
			[]string{"the gateway's database", "GATEWAY_HISTORY_DATABASE_URL", `database "` + missing.Path[1:] + `" does not exist`, "createdb -h " + admin.Hostname(), "its tables are made by the first command"}},
		{"the gateway's database ahead of the binary", map[string]string{"GATEWAY_LIVE_DATABASE_URL": empty, "GATEWAY_HISTORY_DATABASE_URL": ahead}, create,
			[]string{"the gateway's database", "GATEWAY_HISTORY_DATABASE_URL", "track audit is at version 2", "this binary is older than the database's schema"}},
		{"schema into a missing database", map[string]string{"GATEWAY_LIVE_DATABASE_URL": missing.String(), "GATEWAY_TEST_DATABASE_URL": empty}, []string{"data", "schema"},
			[]string{"the live database", "GATEWAY_LIVE_DATABASE_URL", `database "` + missing.Path[1:] + `" does not exist`}},
	}
	for _, c := range cases {
		env := map[string]string{"GATEWAY_REDIS_URL": testenv.RedisURL(), "GATEWAY_REDIS_PREFIX": prefix, "GATEWAY_HISTORY_DATABASE_URL": gatewayDB}
		for k, v := range c.env {
			env[k] = v
		}
		code, out, errs := runCLI(envOf(env), c.args...)
		if code != 1 || out != "" {
			t.Errorf("%s: exit %d, stdout %q", c.name, code, out)
		}
		for _, w := range append(c.want, "gateway: ") {
			if !strings.Contains(errs, w) {
				t.Errorf("%s: the message lacks %q:\n%s", c.name, w, errs)
			}
		}
		if strings.Contains(errs, "retry later") {
			t.Errorf("%s: the API's public text instead of the cause:\n%s", c.name, errs)
		}
	}
}

// Every setting is checked before anything connects: a bad one stops
// `serve` before Redis or a database is asked anything.
func TestSettingsCheckedBeforeConnecting(t *testing.T) {
	redisProxy := testenv.NewFaultProxy(t, strings.Split(testenv.RedisURL(), "/")[2])
	pgProxy := testenv.PostgresProxy(t)
	live := pgProxy.Via(testenv.Postgres(t))
	test := pgProxy.Via(testenv.Postgres(t))
	base := map[string]string{
		"GATEWAY_REDIS_URL": redisProxy.Via(testenv.RedisURL()), "GATEWAY_LIVE_DATABASE_URL": live, "GATEWAY_TEST_DATABASE_URL": test,
		"GATEWAY_HISTORY_DATABASE_URL": pgProxy.Via(testenv.Postgres(t)),
		"GATEWAY_ADDR":                 "127.0.0.1:0", "GATEWAY_ADMIN_ADDR": "127.0.0.1:0",
	}
	for _, bad := range []map[string]string{
		{"GATEWAY_ADDR": ":99999"},
		{"GATEWAY_ADMIN_ADDR": "127.0.0.1:http-alt-nope"},
		{"GATEWAY_QUERY_TIMEOUT": "-1s"},
		{"GATEWAY_LOG_LEVEL": "loud"},
		{"GATEWAY_HISTORY_DATABASE_URL": "mysql://db/gateway"},
		{"OTEL_TRACES_EXPORTER": "console"}, // read from the process's environment, as the SDK does
	} {
		env := map[string]string{}
		for k, v := range base {
			env[k] = v
		}
		var name string
		for k, v := range bad {
			env[k], name = v, k
			if strings.HasPrefix(k, "OTEL_") {
				t.Setenv(k, v)
			}
		}
		code, _, errs := runCLI(envOf(env), "serve")
		if code != 1 || !strings.Contains(errs, name) {
			t.Errorf("%v: exit %d, stderr %q; want 1 naming %s", bad, code, errs, name)
		}
	}
	if n := redisProxy.Accepted() + pgProxy.Accepted(); n != 0 {
		t.Errorf("%d connections to Redis or PostgreSQL before the settings were checked", n)
	}
}
