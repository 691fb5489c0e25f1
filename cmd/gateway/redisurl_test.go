package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/invoicing-ao/gateway/admin"
	"github.com/invoicing-ao/gateway/authz"
	"github.com/invoicing-ao/gateway/backend/gendata"
	"github.com/invoicing-ao/gateway/cmd/gateway/internal/config"
	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
)

// TestGatewayOnRedisCluster runs the binary's own wiring (configuration,
// connect, the public handler) on a real Redis Cluster given as a
// redis+cluster:// URL: a key made through the admin path verifies on a
// request, the rate limit admits the burst and answers 429 after it.
func TestGatewayOnRedisCluster(t *testing.T) {
	// Not parallel: the gateway runs in the test process, where its sub-second
	// Redis deadlines (a key's verification, a rate-limit decision) must not
	// compete with the parallel tests for the CPU.
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
	// Not parallel: the gateway runs in the test process, where its sub-second
	// Redis deadlines (a key's verification, a rate-limit decision) must not
	// compete with the parallel tests for the CPU.
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
	cfg, err := config.Load("../../configs/gateway.yaml", envOf(map[string]string{
		"GATEWAY_REDIS_URL":            redisURL,
		"GATEWAY_LIVE_DATABASE_URL":    live,
		"GATEWAY_TEST_DATABASE_URL":    test,
		"GATEWAY_HISTORY_DATABASE_URL": testenv.Postgres(t),
	}), config.NeedAll)
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
	k, err := d.admin.Keys.CreateKey(ctx, "test@local", admin.KeySpec{CompanyID: gendata.DemoCompanyA, Mode: invoicing.Live, Scopes: scopes, Name: "smoke"})
	if err != nil {
		t.Fatalf("create key through %s: %v", redisURL, err)
	}
	if _, err := d.admin.Limits.SetCompanyLimit(ctx, "test@local", gendata.DemoCompanyA, "LIVE", 0.01, 2); err != nil {
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
