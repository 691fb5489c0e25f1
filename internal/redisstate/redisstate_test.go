package redisstate_test

import (
	"context"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/invoicing-ao/gateway/internal/redisstate"
	"github.com/invoicing-ao/gateway/internal/testenv"
)

// verdicts is a report's checks as "check=state/value".
func verdicts(r redisstate.Report) string {
	var out []string
	for _, c := range r.Checks() {
		out = append(out, c.Name+"="+string(c.State)+"/"+c.Value)
	}
	return strings.Join(out, " ")
}

func client(t *testing.T, opt *redis.Options) *redis.Client {
	c := redis.NewClient(opt)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// Real servers, each started as an operator would run it: what each allows
// is read as it is, and a server that hides its configuration (CONFIG
// renamed away, or a user without it) is unknown, never a failure.
func TestInspectServers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"in memory only", nil, "persistence=at_risk/none eviction=ok/noeviction replicas=at_risk/0"},
		{"AOF", []string{"--appendonly", "yes"}, "persistence=ok/aof eviction=ok/noeviction replicas=at_risk/0"},
		{"snapshots", []string{"--save", "3600 1"}, "persistence=ok/rdb eviction=ok/noeviction replicas=at_risk/0"},
		{"a cache", []string{"--appendonly", "yes", "--maxmemory", "64mb", "--maxmemory-policy", "allkeys-lru"},
			"persistence=ok/aof eviction=at_risk/allkeys-lru replicas=at_risk/0"},
		{"volatile, no maxmemory", []string{"--maxmemory-policy", "volatile-lru"}, "persistence=at_risk/none eviction=at_risk/volatile-lru replicas=at_risk/0"},
		{"CONFIG renamed away", []string{"--rename-command", "CONFIG", ""}, "persistence=unknown/ eviction=unknown/ replicas=at_risk/0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := testenv.StartRedisServerWith(t, 0, c.args...)
			r := redisstate.Inspect(ctx, redisstate.Source{Redis: client(t, &redis.Options{Addr: s.Addr()}), Topology: redisstate.Single, Label: s.Addr()})
			if r.Err != nil || verdicts(r) != c.want {
				t.Fatalf("Inspect = %s (err %v), want %s", verdicts(r), r.Err, c.want)
			}
			if yes, known := r.Replicated(); yes || !known {
				t.Errorf("Replicated = %v, %v; want false, known", yes, known)
			}
		})
	}
	t.Run("a user without CONFIG", func(t *testing.T) {
		s := testenv.StartRedisServerWith(t, 0, "--appendonly", "yes")
		admin := client(t, &redis.Options{Addr: s.Addr()})
		if err := admin.Do(ctx, "ACL", "SETUSER", "gateway", "on", ">gateway-pass", "~*", "&*", "+@all", "-config").Err(); err != nil {
			t.Fatal(err)
		}
		c := client(t, &redis.Options{Addr: s.Addr(), Username: "gateway", Password: "gateway-pass"})
		r := redisstate.Inspect(ctx, redisstate.Source{Redis: c, Topology: redisstate.Single, Label: s.Addr()})
		if want := "persistence=unknown/ eviction=unknown/ replicas=at_risk/0"; r.Err != nil || verdicts(r) != want {
			t.Fatalf("Inspect = %s (err %v), want %s", verdicts(r), r.Err, want)
		}
	})
	t.Run("miniredis", func(t *testing.T) { // the demo's: says nothing
		rdb, _ := testenv.Miniredis(t)
		r := redisstate.Inspect(ctx, redisstate.Source{Redis: rdb, Topology: redisstate.Single, Label: "demo"})
		if want := "persistence=unknown/ eviction=unknown/ replicas=unknown/"; r.Err != nil || verdicts(r) != want {
			t.Fatalf("Inspect = %s (err %v), want %s", verdicts(r), r.Err, want)
		}
		if _, known := r.Replicated(); known {
			t.Error("miniredis is said to be known replicated or not")
		}
	})
	t.Run("unreachable", func(t *testing.T) {
		s := testenv.StartRedisServer(t, 0)
		s.Kill()
		r := redisstate.Inspect(ctx, redisstate.Source{Redis: client(t, &redis.Options{Addr: s.Addr(), MaxRetries: -1}), Topology: redisstate.Single, Label: s.Addr()})
		if r.Err == nil || verdicts(r) != "persistence=unknown/ eviction=unknown/ replicas=unknown/" {
			t.Fatalf("Inspect of a stopped server = %s, err %v; want unknown with the error", verdicts(r), r.Err)
		}
	})
}

// A master with a replica, through the master's address and through
// Sentinel: replicated, one replica online; held back, it stays online
// (the link is up, only slow).
func TestInspectReplicated(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := testenv.RedisReplicated(t)
	for _, c := range []struct {
		name     string
		rdb      redis.UniversalClient
		topo     redisstate.Topology
		sentinel *redis.FailoverOptions
	}{
		{"master", r.Direct(r.Master), redisstate.Single, nil},
		{"sentinel", r.Client(), redisstate.Sentinel, &redis.FailoverOptions{MasterName: r.Name, SentinelAddrs: []string{r.Sentinel}}},
	} {
		rep := redisstate.Inspect(ctx, redisstate.Source{Redis: c.rdb, Topology: c.topo, Label: "m", Sentinel: c.sentinel})
		if want := "persistence=at_risk/none eviction=ok/noeviction replicas=ok/1"; rep.Err != nil || verdicts(rep) != want {
			t.Errorf("%s: Inspect = %s (err %v), want %s", c.name, verdicts(rep), rep.Err, want)
		}
		if yes, known := rep.Replicated(); !yes || !known || rep.SentinelKnown != (c.sentinel != nil) {
			t.Errorf("%s: Replicated = %v, %v (Sentinel asked: %v)", c.name, yes, known, rep.SentinelKnown)
		}
	}
	// A Sentinel that knows no replica: not replicated.
	addr, name := testenv.RedisSentinel(t)
	opt := &redis.FailoverOptions{MasterName: name, SentinelAddrs: []string{addr}}
	fc := redis.NewFailoverClient(opt)
	t.Cleanup(func() { _ = fc.Close() })
	alone := redisstate.Inspect(ctx, redisstate.Source{Redis: fc, Topology: redisstate.Sentinel, Sentinel: opt})
	if yes, known := alone.Replicated(); yes || !known || !alone.SentinelKnown {
		t.Errorf("a Sentinel without replicas: Replicated = %v, %v (Sentinel asked: %v)", yes, known, alone.SentinelKnown)
	}
	// The replica's own view: not a master, so nothing said of replicas.
	rep := redisstate.Inspect(ctx, redisstate.Source{Redis: r.Direct(r.Replica), Topology: redisstate.Single, Label: "replica"})
	if c := rep.Check(redisstate.Replicas); c.State != redisstate.Unknown {
		t.Errorf("a replica's replicas: %+v, want unknown", c)
	}
}

// Redis Cluster: every master is read, each with its replica; one master's
// replica stopped still counts as configured, so the deployment is still
// replicated, and the fewest online is what the replicas check says.
func TestInspectCluster(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := testenv.RedisClusterReplicated(t)
	rdb := c.Client()
	rep := redisstate.Inspect(ctx, redisstate.Source{Redis: rdb, Topology: redisstate.Cluster})
	if rep.Err != nil || len(rep.Servers) != 3 {
		t.Fatalf("Inspect = %+v", rep)
	}
	for _, s := range rep.Servers {
		if s.Configured != 1 || s.Replicas != 1 || !s.ConfigKnown {
			t.Errorf("master %+v: want one replica, configuration known", s)
		}
	}
	if want := "persistence=at_risk/none eviction=ok/noeviction replicas=ok/1"; verdicts(rep) != want {
		t.Errorf("Inspect = %s, want %s", verdicts(rep), want)
	}
	// Without replicas.
	bare := redisstate.Inspect(ctx, redisstate.Source{Redis: testenv.RedisClusterClient(t), Topology: redisstate.Cluster})
	if yes, known := bare.Replicated(); yes || !known || bare.Check(redisstate.Replicas).State != redisstate.AtRisk {
		t.Errorf("a cluster without replicas: Replicated %v %v, %s", yes, known, verdicts(bare))
	}
}
