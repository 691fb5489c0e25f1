package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/internal/seal"
)

// envOf is an environment of m's variables, with a webhook secrets key
// unless m sets GATEWAY_WEBHOOK_SECRETS_KEY (to "" for none): serve, which
// Load checks for unless a test says otherwise, requires one.
func envOf(m map[string]string) func(string) string {
	return func(k string) string {
		if v, ok := m[k]; ok || k != "GATEWAY_WEBHOOK_SECRETS_KEY" {
			return v
		}
		return testSecretsKey
	}
}

// testSecretsKey is an age identity made for this test binary.
var testSecretsKey = func() string {
	id, _, err := seal.Generate()
	if err != nil {
		panic(err)
	}
	return id
}()

func TestConfigLayers(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "gateway.yaml")
	yaml := "addr: \":9000\"\nliveDatabaseURL: postgres://u:secret@db/live\ntestDatabaseURL: sqlite:/tmp/t.db\nhistoryDatabaseURL: sqlite:/tmp/g.db\nqueryTimeout: 750ms\nliveRate: 5\n"
	if err := os.WriteFile(file, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(file, envOf(map[string]string{"GATEWAY_ADDR": ":9100", "GATEWAY_LIVE_BURST": "7"}), NeedAll)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Addr != ":9100" || cfg.LiveBurst != 7 || cfg.LiveRate != 5 || cfg.QueryTimeout != 750*time.Millisecond ||
		cfg.AdminAddr != "127.0.0.1:8081" || cfg.TestDatabaseURL != "sqlite:/tmp/t.db" || cfg.HistoryDatabaseURL != "sqlite:/tmp/g.db" {
		t.Fatalf("layers not applied: %+v", cfg)
	}
}

func TestConfigErrorsNameTheSetting(t *testing.T) {
	base := map[string]string{"GATEWAY_LIVE_DATABASE_URL": "postgres://db/live", "GATEWAY_TEST_DATABASE_URL": "postgres://db/test", "GATEWAY_HISTORY_DATABASE_URL": "postgres://db/gateway"}
	cases := []struct {
		set  map[string]string
		want string
	}{
		{map[string]string{"GATEWAY_ADDR": "8080"}, "GATEWAY_ADDR"},
		{map[string]string{"GATEWAY_ADMIN_ADDR": ":8080"}, "GATEWAY_ADMIN_ADDR"},
		{map[string]string{"GATEWAY_REDIS_URL": "http://x"}, "GATEWAY_REDIS_URL"},
		{map[string]string{"GATEWAY_LIVE_DATABASE_URL": "mysql://x"}, "GATEWAY_LIVE_DATABASE_URL"},
		{map[string]string{"GATEWAY_LIVE_DATABASE_URL": ""}, "GATEWAY_LIVE_DATABASE_URL"},
		{map[string]string{"GATEWAY_TEST_DATABASE_URL": "postgres://db/live"}, "GATEWAY_TEST_DATABASE_URL"},
		{map[string]string{"GATEWAY_HISTORY_DATABASE_URL": ""}, "GATEWAY_HISTORY_DATABASE_URL (historyDatabaseURL): is required"},
		{map[string]string{"GATEWAY_HISTORY_DATABASE_URL": "mysql://x"}, "GATEWAY_HISTORY_DATABASE_URL"},
		{map[string]string{"GATEWAY_HISTORY_DATABASE_URL": "postgres://db/live"}, "GATEWAY_HISTORY_DATABASE_URL (historyDatabaseURL): must differ from the live and sandbox databases"},
		{map[string]string{"GATEWAY_HISTORY_DATABASE_URL": "postgres://db/test"}, "GATEWAY_HISTORY_DATABASE_URL (historyDatabaseURL): must differ"},
		{map[string]string{"GATEWAY_QUERY_TIMEOUT": "soon"}, "GATEWAY_QUERY_TIMEOUT"},
		{map[string]string{"GATEWAY_LIVE_RATE": "-1"}, "GATEWAY_LIVE_RATE"},
		{map[string]string{"GATEWAY_LIVE_RATE": "1000000"}, "GATEWAY_LIVE_RATE"}, // above the limiter's bound
		{map[string]string{"GATEWAY_LIVE_BURST": "-1"}, "GATEWAY_LIVE_BURST"},
		{map[string]string{"GATEWAY_QUERY_TIMEOUT": "-1s"}, "GATEWAY_QUERY_TIMEOUT"},               // backend's check
		{map[string]string{"GATEWAY_INFLIGHT_PER_COMPANY": "100"}, "GATEWAY_INFLIGHT_PER_COMPANY"}, // above the guard's default total
		{map[string]string{"GATEWAY_KEY_STALE_TTL": "-1m"}, "GATEWAY_KEY_STALE_TTL"},
		{map[string]string{"GATEWAY_EVENTS_TIMEOUT": "20s"}, "GATEWAY_EVENTS_TIMEOUT"},
		{map[string]string{"GATEWAY_TEST_BURST": "1000000"}, "GATEWAY_TEST_BURST"},
		{map[string]string{"GATEWAY_TEST_RATE": "0.0001"}, "GATEWAY_TEST_RATE"},
		{map[string]string{"GATEWAY_DATABASE_MAX_CONNS": "x"}, "GATEWAY_DATABASE_MAX_CONNS"},
		{map[string]string{"GATEWAY_KEY_CACHE_TTL": "5s"}, "GATEWAY_KEY_CACHE_TTL"},
		{map[string]string{"GATEWAY_LOG_LEVEL": "loud"}, "GATEWAY_LOG_LEVEL"},
		{map[string]string{"GATEWAY_EVENTS_REMEMBER": "24h"}, "GATEWAY_EVENTS_REMEMBER"},   // shorter than the retention
		{map[string]string{"GATEWAY_EVENTS_RETENTION": "24h"}, "GATEWAY_EVENTS_RETENTION"}, // shorter than the retry schedule
	}
	for _, c := range cases {
		env := map[string]string{}
		for k, v := range base {
			env[k] = v
		}
		for k, v := range c.set {
			env[k] = v
			if v == "" { // unset
				delete(env, k)
			}
		}
		_, err := Load("", envOf(env), NeedAll)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want one naming %s", c.set, err, c.want)
		}
	}
	// Unknown keys in the file are refused, not ignored.
	file := filepath.Join(t.TempDir(), "g.yaml")
	_ = os.WriteFile(file, []byte("adress: \":1\"\n"), 0o600)
	if _, err := Load(file, envOf(base), NeedAll); err == nil || !strings.Contains(err.Error(), "adress") {
		t.Errorf("unknown YAML key: %v", err)
	}
	if _, err := Load("", envOf(base), NeedAll); err != nil {
		t.Errorf("valid configuration refused: %v", err)
	}
}

func TestShippedConfigLoads(t *testing.T) {
	cfg, err := Load("../../../../configs/gateway.yaml", envOf(nil), NeedAll)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Addr != Default().Addr {
		t.Errorf("shipped config addr %q", cfg.Addr)
	}
	if !strings.HasPrefix(cfg.HistoryDatabaseURL, "postgres:///gateway_history?") {
		t.Errorf("shipped config: historyDatabaseURL %q, want the local server's gateway_history", cfg.HistoryDatabaseURL)
	}
}

func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://u:secret@h/db": "postgres://u:***@h/db",
		"postgres://u@h/db":        "postgres://u@h/db",
		"sqlite:/tmp/x.db":         "sqlite:/tmp/x.db",
	} {
		if got := RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
}

// The settings a component reads are zero in Default(), so that the
// component's own default applies and is written once, in the component;
// the binary's own settings keep theirs.
func TestDefaultLeavesComponentsTheirDefaults(t *testing.T) {
	d := reflect.ValueOf(Default())
	for _, field := range []string{"DatabaseMaxConns", "QueryTimeout", "BreakerFailures", "BreakerOpenFor", "ReadYourWritesWindow",
		"LiveRate", "LiveBurst", "TestRate", "TestBurst", "InflightPerCompany", "InflightTotal", "KeyCacheTTL", "KeyStaleTTL",
		"EventsTimeout", "EventsConcurrency", "EventsRetention", "EventsRecovery", "EventsRemember", "EventsFeedWindow"} {
		if f := d.FieldByName(field); !f.IsValid() || !f.IsZero() {
			t.Errorf("Default().%s = %v: the component's default, not a copy of it, must apply", field, f)
		}
	}
	if d := Default(); d.Addr == "" || d.AdminAddr == "" || d.RedisURL == "" || d.ShutdownTimeout == 0 || d.LogLevel == "" {
		t.Errorf("the binary's own defaults are gone: %+v", d)
	}
}

// Zero values pass the components' checks, which apply their defaults
// first: one setting beside the others' defaults is judged against them.
func TestComponentsJudgeWithTheirDefaults(t *testing.T) {
	base := map[string]string{"GATEWAY_LIVE_DATABASE_URL": "postgres://db/live", "GATEWAY_TEST_DATABASE_URL": "postgres://db/test",
		"GATEWAY_HISTORY_DATABASE_URL": "postgres://db/gateway"}
	for _, c := range []struct {
		set map[string]string
		ok  bool
	}{
		{map[string]string{}, true},
		{map[string]string{"GATEWAY_LIVE_RATE": "5"}, true},                  // the default burst beside it
		{map[string]string{"GATEWAY_INFLIGHT_PER_COMPANY": "64"}, true},      // the default total
		{map[string]string{"GATEWAY_INFLIGHT_TOTAL": "4"}, false},            // below the default per company
		{map[string]string{"GATEWAY_EVENTS_REMEMBER": "100h"}, false},        // below the default retention
		{map[string]string{"GATEWAY_EVENTS_RECOVERY": "1000h"}, true},        // the default remember follows it
		{map[string]string{"GATEWAY_EVENTS_FEED_WINDOW": "100h"}, false},     // below the default retention
		{map[string]string{"GATEWAY_KEY_CACHE_TTL": "500ms"}, true},          // within the second
		{map[string]string{"GATEWAY_READ_YOUR_WRITES_WINDOW": "-1s"}, false}, // backend's check
		{map[string]string{"GATEWAY_EVENTS_CONCURRENCY": "-1"}, false},       // events' check
		{map[string]string{"GATEWAY_BREAKER_OPEN_FOR": "1s", "GATEWAY_BREAKER_FAILURES": "2"}, true},
	} {
		env := map[string]string{}
		for k, v := range base {
			env[k] = v
		}
		for k, v := range c.set {
			env[k] = v
		}
		_, err := Load("", envOf(env), NeedAll)
		if (err == nil) != c.ok {
			t.Errorf("%v: %v, want ok %v", c.set, err, c.ok)
		}
		for k := range c.set {
			if err != nil && !strings.Contains(err.Error(), k) {
				t.Errorf("%v: %v, want an error naming %s", c.set, err, k)
			}
		}
	}
}
