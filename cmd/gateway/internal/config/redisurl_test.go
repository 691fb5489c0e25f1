package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
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
			c, err := NewRedisClient(tc.url)
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
			if top, _, _ := RedisTopology(tc.url); top != tc.topology {
				t.Errorf("topology %q, want %q", top, tc.topology)
			}
			tc.check(t, c)
		})
	}
	_, err := Load("", envOf(map[string]string{"GATEWAY_REDIS_URL": "redis+ring://x:1",
		"GATEWAY_LIVE_DATABASE_URL": "sqlite:a", "GATEWAY_TEST_DATABASE_URL": "sqlite:b", "GATEWAY_HISTORY_DATABASE_URL": "sqlite:c"}), NeedAll)
	if err == nil || !strings.Contains(err.Error(), "GATEWAY_REDIS_URL (redisURL)") {
		t.Errorf("config error %v does not name the setting", err)
	}
}

// redisMinReplicas: auto unless set, in YAML (a number or auto) and in the
// environment alike; an explicit 0 is kept apart from unset; anything else
// is refused naming the setting.
func TestMinReplicasSetting(t *testing.T) {
	dir := t.TempDir()
	file := func(body string) string {
		p := filepath.Join(dir, "c.yaml")
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, c := range []struct {
		name, yaml, env string
		n               int
		auto            bool
		bad             bool
	}{
		{name: "unset", n: 0, auto: true},
		{name: "yaml auto", yaml: "redisMinReplicas: auto\n", auto: true},
		{name: "yaml number", yaml: "redisMinReplicas: 2\n", n: 2},
		{name: "yaml explicit 0", yaml: "redisMinReplicas: 0\n", n: 0},
		{name: "yaml quoted 0", yaml: "redisMinReplicas: \"0\"\n", n: 0},
		{name: "env 0 over yaml auto", yaml: "redisMinReplicas: auto\n", env: "0", n: 0},
		{name: "env auto over yaml 1", yaml: "redisMinReplicas: 1\n", env: "AUTO", auto: true},
		{name: "negative", env: "-1", bad: true},
		{name: "word", yaml: "redisMinReplicas: two\n", bad: true},
	} {
		path := ""
		if c.yaml != "" {
			path = file(c.yaml)
		}
		cfg, err := Load(path, envOf(map[string]string{"GATEWAY_REDIS_MIN_REPLICAS": c.env}), NeedRedis)
		if c.bad {
			if err == nil || !strings.Contains(err.Error(), "GATEWAY_REDIS_MIN_REPLICAS (redisMinReplicas)") || !strings.Contains(err.Error(), "auto") {
				t.Errorf("%s: %v, want a refusal naming the setting and auto", c.name, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		n, auto, err := ParseMinReplicas(cfg.RedisMinReplicas)
		if err != nil || n != c.n || auto != c.auto {
			t.Errorf("%s: %q = %d, auto %v, %v; want %d, auto %v", c.name, cfg.RedisMinReplicas, n, auto, err, c.n, c.auto)
		}
	}
}
