package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/invoicing-ao/gateway/admin"
	"github.com/invoicing-ao/gateway/authz"
	"github.com/invoicing-ao/gateway/backend/gendata"
	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
)

func TestRedisURLForms(t *testing.T) {
	for _, tc := range []struct {
		url      string
		topology string // "" when refused
		check    func(t *testing.T, c redis.UniversalClient)
	}{
		{"redis://127.0.0.1:6379/2", "single", func(t *testing.T, c redis.UniversalClient) {
			o := c.(*redis.Client).Options()
			if o.Addr != "127.0.0.1:6379" || o.DB != 2 || o.TLSConfig != nil || !o.ContextTimeoutEnabled {
				t.Errorf("options %+v", o)
			}
		}},
		{"rediss://u:pw@cache.internal:6380/0", "single", func(t *testing.T, c redis.UniversalClient) {
			o := c.(*redis.Client).Options()
			if o.TLSConfig == nil || o.Username != "u" || o.Password != "pw" || !o.ContextTimeoutEnabled {
				t.Errorf("options %+v", o)
			}
		}},
		{"redis+sentinel://s1:26379/0?master_name=gw&addr=s2:26379&addr=s3:26379&password=pw", "sentinel", func(t *testing.T, c redis.UniversalClient) {
			// A failover client is a *redis.Client whose dialer asks the sentinels.
			o := c.(*redis.Client).Options()
			if o.Password != "pw" || !o.ContextTimeoutEnabled {
				t.Errorf("options %+v", o)
			}
		}},
		{"redis+cluster://n1:7000?addr=n2:7001&addr=n3:7002", "cluster", func(t *testing.T, c redis.UniversalClient) {
			o := c.(*redis.ClusterClient).Options()
			if strings.Join(o.Addrs, ",") != "n1:7000,n2:7001,n3:7002" || o.TLSConfig != nil || !o.ContextTimeoutEnabled {
				t.Errorf("options %+v", o)
			}
			// A failover must not leave a dead master's slots mapped for
			// go-redis's minute (TestClusterFailoverOnShippedDefaults).
			if o.ClusterStateReloadInterval != clusterStateReload {
				t.Errorf("the slots are read again every %v, want %v", o.ClusterStateReloadInterval, clusterStateReload)
			}
		}},
		{"rediss+cluster://n1:7000", "cluster", func(t *testing.T, c redis.UniversalClient) {
			if c.(*redis.ClusterClient).Options().TLSConfig == nil {
				t.Error("no TLS")
			}
		}},
		{"redis+sentinel://s1:26379", "", nil},        // no master name
		{"redis+cluster://n1:7000/3", "", nil},        // a cluster has db 0 only
		{"redis+ring://n1:7000", "", nil},             // unknown topology
		{"http://n1:7000", "", nil},                   // not Redis
		{"redis://u:secret@h:port/0", "", nil},        // bad port; the message must not quote the password
		{"127.0.0.1:6379", "", nil},                   // no scheme
		{"redis://127.0.0.1:6379/0?bogus=1", "", nil}, // unknown option
	} {
		t.Run(tc.url, func(t *testing.T) {
			c, err := newRedisClient(tc.url)
			if tc.topology == "" {
				if err == nil {
					_ = c.Close()
					t.Fatal("accepted")
				}
				if strings.Contains(err.Error(), "secret") {
					t.Errorf("error shows the password: %v", err)
				}
				if cerr := checkRedisURL(tc.url); cerr == nil {
					t.Error("checkRedisURL accepted it")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if top, _, _ := redisTopology(tc.url); top != tc.topology {
				t.Errorf("topology %q, want %q", top, tc.topology)
			}
			tc.check(t, c)
		})
	}
	_, err := loadConfig("", envOf(map[string]string{"GATEWAY_REDIS_URL": "redis+ring://x:1",
		"GATEWAY_LIVE_DATABASE_URL": "sqlite:a", "GATEWAY_TEST_DATABASE_URL": "sqlite:b"}))
	if err == nil || !strings.Contains(err.Error(), "GATEWAY_REDIS_URL (redisURL)") {
		t.Errorf("config error %v does not name the setting", err)
	}
}

// TestGatewayOnRedisCluster runs the binary's own wiring (configuration,
// connect, the public handler) on a real Redis Cluster given as a
// redis+cluster:// URL: a key made through the admin path verifies on a
// request, the rate limit admits the burst and answers 429 after it.
func TestGatewayOnRedisCluster(t *testing.T) {
	addrs := testenv.RedisCluster(t, 3)
	d := smokeGateway(t, "redis+cluster://"+addrs[0]+"?addr="+addrs[1]+"&addr="+addrs[2])
	if _, ok := d.rdb.(*redis.ClusterClient); !ok {
		t.Fatalf("redis client is a %T, want a cluster client", d.rdb)
	}
}

// TestGatewayOnRedisSentinel is the same through a real Sentinel; its
// master has no replica, which the Sentinel says: changes wait for none
// (redisMinReplicas auto).
func TestGatewayOnRedisSentinel(t *testing.T) {
	addr, master := testenv.RedisSentinel(t)
	d := smokeGateway(t, "redis+sentinel://"+addr+"/0?master_name="+master)
	if n := d.guard.target.Replicas(); n != 0 {
		t.Errorf("a Sentinel whose master has no replica: changes wait for %d replicas, want 0", n)
	}
}

func smokeGateway(t *testing.T, redisURL string) *deps {
	t.Helper()
	ctx := context.Background()
	live, test := testenv.Postgres(t), testenv.Postgres(t)
	if _, err := gendata.SetUpSmall(ctx, live, test, 3); err != nil {
		t.Fatal(err)
	}
	cfg, err := loadConfig("../../configs/gateway.yaml", envOf(map[string]string{
		"GATEWAY_REDIS_URL":         redisURL,
		"GATEWAY_LIVE_DATABASE_URL": live,
		"GATEWAY_TEST_DATABASE_URL": test,
	}))
	if err != nil {
		t.Fatal(err)
	}
	d, err := connect(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	pub := httptest.NewServer(d.server.Handler())
	t.Cleanup(pub.Close)

	scopes, _ := authz.ParseScopes("clients:read")
	k, err := d.admin.CreateKey(ctx, "test@local", admin.KeySpec{CompanyID: gendata.DemoCompanyA, Mode: invoicing.Live, Scopes: scopes, Name: "smoke"})
	if err != nil {
		t.Fatalf("create key through %s: %v", redisURL, err)
	}
	if _, err := d.admin.SetCompanyLimit(ctx, "test@local", gendata.DemoCompanyA, "LIVE", 0.01, 2); err != nil {
		t.Fatalf("set limit through %s: %v", redisURL, err)
	}
	get := func(path, key string) (int, map[string]any) {
		t.Helper()
		r, _ := http.NewRequest(http.MethodGet, pub.URL+path, nil)
		if key != "" {
			r.Header.Set("Authorization", "Bearer "+key)
			r.Header.Set("X-Company-Id", gendata.DemoCompanyA)
		}
		res, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var m map[string]any
		_ = json.NewDecoder(res.Body).Decode(&m)
		return res.StatusCode, m
	}
	if code, _ := get("/readyz", ""); code != http.StatusOK {
		t.Fatalf("readyz: %d", code)
	}
	for i := 0; i < 2; i++ {
		if code, body := get("/api/v1/v1/clients?pageSize=1", k.Key); code != http.StatusOK {
			t.Fatalf("request %d: %d %v", i, code, body)
		}
	}
	if code, body := get("/api/v1/v1/clients?pageSize=1", k.Key); code != http.StatusTooManyRequests || body["code"] != "rate_limit_live" {
		t.Fatalf("past the burst: %d %v, want 429 rate_limit_live", code, body)
	}
	if code, body := get("/api/v1/v1/clients?pageSize=1", "igw_live_0000000000000000000000000000000000000000000"); code != http.StatusUnauthorized {
		t.Fatalf("unknown key: %d %v", code, body)
	}
	return d
}

func TestReplicaSettings(t *testing.T) {
	base := map[string]string{
		"GATEWAY_LIVE_DATABASE_URL": "postgres://db/live", "GATEWAY_TEST_DATABASE_URL": "postgres://db/sandbox",
	}
	for _, tc := range []struct {
		env  map[string]string
		want string // "" = valid, else the setting named in the error
	}{
		{map[string]string{}, ""},
		{map[string]string{"GATEWAY_LIVE_REPLICA_URL": "postgres://replica/live", "GATEWAY_TEST_REPLICA_URL": "postgres://replica/sandbox"}, ""},
		{map[string]string{"GATEWAY_LIVE_REPLICA_URL": "mysql://replica/live"}, "GATEWAY_LIVE_REPLICA_URL"},
		{map[string]string{"GATEWAY_TEST_REPLICA_URL": "sqlite:/tmp/x.db"}, "GATEWAY_TEST_REPLICA_URL"},
		{map[string]string{"GATEWAY_TEST_REPLICA_URL": "postgres://db/live"}, "GATEWAY_TEST_REPLICA_URL"},
		{map[string]string{"GATEWAY_LIVE_REPLICA_URL": "postgres://r/x", "GATEWAY_TEST_REPLICA_URL": "postgres://r/x"}, "GATEWAY_TEST_REPLICA_URL"},
		{map[string]string{"GATEWAY_READ_YOUR_WRITES_WINDOW": "-1s"}, "GATEWAY_READ_YOUR_WRITES_WINDOW"},
	} {
		env := map[string]string{}
		for k, v := range base {
			env[k] = v
		}
		for k, v := range tc.env {
			env[k] = v
		}
		cfg, err := loadConfig("", envOf(env))
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v: %v", tc.env, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%v: error %v does not name %s", tc.env, err, tc.want)
		case tc.want == "" && (replicaOf(cfg, "LiveDatabaseURL") != tc.env["GATEWAY_LIVE_REPLICA_URL"] || replicaOf(cfg, "TestDatabaseURL") != tc.env["GATEWAY_TEST_REPLICA_URL"]):
			t.Errorf("%v: replicas %q %q", tc.env, cfg.LiveReplicaURL, cfg.TestReplicaURL)
		}
	}
}
