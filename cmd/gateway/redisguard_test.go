package main

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/invoicing-ao/gateway/cmd/gateway/internal/config"
	"github.com/invoicing-ao/gateway/internal/redisstate"
	"github.com/invoicing-ao/gateway/internal/testenv"
)

// The target auto follows, reading after reading: one until Redis has been
// read, none on a Redis without replicas, one once replicas appear, and
// kept at one when they go (changes are then refused, never silently
// unconfirmed); a fixed setting is what it says whatever Redis has.
func TestAutoTargetFollowsReadings(t *testing.T) {
	t.Parallel()
	alone := redisstate.Report{Topology: redisstate.Single, Servers: []redisstate.Server{{ReplicasKnown: true}}}
	withReplica := redisstate.Report{Topology: redisstate.Single, Servers: []redisstate.Server{{ReplicasKnown: true, Replicas: 1, Configured: 1}}}
	silent := redisstate.Report{Topology: redisstate.Single, Servers: []redisstate.Server{{}}}
	down := redisstate.Report{Topology: redisstate.Single, Err: errors.New("connection refused")}
	for _, c := range []struct {
		name    string
		setting string
		reports []redisstate.Report
		want    []int // the target after each reading
		said    string
	}{
		{"auto, alone then replicated then alone", "auto", []redisstate.Report{alone, withReplica, alone, down}, []int{0, 1, 1, 1},
			"Redis is replicated: every change now waits"},
		{"auto, down at start", "auto", []redisstate.Report{down, down, alone}, []int{1, 1, 0}, ""},
		{"auto, silent", "auto", []redisstate.Report{silent}, []int{0}, ""},
		{"explicit 0", "0", []redisstate.Report{withReplica}, []int{0}, ""},
		{"explicit 2", "2", []redisstate.Report{alone, withReplica}, []int{2, 2}, "fewer replicas online than changes wait for"},
	} {
		var logs bytes.Buffer
		g := newRedisGuard(config.Config{RedisMinReplicas: c.setting}, slog.New(slog.NewTextHandler(&logs, nil)))
		g.started = true // log as serve does after start-up
		before := redisstate.Report{}
		for i, r := range c.reports {
			g.onReport(before, r)
			before = r
			if got := g.target.Replicas(); got != c.want[i] {
				t.Errorf("%s: after reading %d, target %d, want %d", c.name, i+1, got, c.want[i])
			}
		}
		if !strings.Contains(logs.String(), c.said) {
			t.Errorf("%s: logs %q, want %q", c.name, logs.String(), c.said)
		}
	}
}

// The binary on real Redis, redisMinReplicas unset: a server without
// replicas is waited for by no change, and start-up says so; a master with
// a replica online, and Sentinel, make every change wait for one; an
// explicit 0 on a replicated Redis is an opt-out start-up names. (Cluster:
// TestChangesConfirmedOnRedisCluster.)
func TestAutoReplicasOnRealRedis(t *testing.T) {
	t.Parallel()
	alone := testenv.StartRedisServer(t, 0)
	r := testenv.RedisReplicated(t)
	for _, c := range []struct {
		name, url, setting string
		want               int
		said               string
	}{
		{"one server, no replica", "redis://" + alone.Addr() + "/0", "", 0, "Redis has no replica: a change is reported done once the Redis master has it"},
		{"master with a replica", "redis://" + r.Master + "/0", "", 1, ""},
		{"sentinel", "redis+sentinel://" + r.Sentinel + "/0?master_name=" + r.Name, "", 1, ""},
		{"explicit 0", "redis://" + r.Master + "/0", "0", 0, "GATEWAY_REDIS_MIN_REPLICAS (redisMinReplicas) is 0: no change waits for a Redis replica"},
	} {
		var logs bytes.Buffer
		env := envOf(map[string]string{"GATEWAY_REDIS_URL": c.url, "GATEWAY_REDIS_MIN_REPLICAS": c.setting})
		cfg, err := config.Load("", env, config.NeedRedis)
		if err != nil {
			t.Fatal(err)
		}
		d, err := connect(context.Background(), cfg, slog.New(slog.NewTextHandler(&logs, nil)), only(config.NeedRedis))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := d.guard.target.Replicas(); got != c.want {
			t.Errorf("%s: changes wait for %d replicas, want %d", c.name, got, c.want)
		}
		if logs.Len() != 0 {
			t.Errorf("%s: a command logged before start-up: %s", c.name, logs.String())
		}
		if err := d.guard.startup(cfg); err != nil {
			t.Errorf("%s: start-up: %v", c.name, err)
		}
		d.Close()
		said := logs.String()
		if c.said != "" && !strings.Contains(said, c.said) || c.said == "" && strings.Contains(said, "replica") {
			t.Errorf("%s: start-up said %q, want %q", c.name, said, c.said)
		}
	}
}

// startup on a reading: refused for eviction unless allowed, with the
// Redis setting and the gateway setting named; quiet about nothing.
func TestStartupRefusesEviction(t *testing.T) {
	t.Parallel()
	lru := redisstate.Report{Topology: redisstate.Single, Servers: []redisstate.Server{{Addr: "10.0.0.5:6379", ConfigKnown: true, AOF: true,
		Policy: "volatile-lru", ReplicasKnown: true, Replicas: 1, Configured: 1}}}
	for _, allow := range []bool{false, true} {
		var logs bytes.Buffer
		cfg := config.Config{RedisMinReplicas: "auto", RedisAllowEviction: allow}
		g := newRedisGuard(cfg, slog.New(slog.NewTextHandler(&logs, nil)))
		g.onReport(redisstate.Report{}, lru)
		err := g.startupOn(cfg, lru)
		switch {
		case !allow && (!errors.Is(err, errEviction) || !strings.Contains(err.Error(), "maxmemory-policy volatile-lru") ||
			!strings.Contains(err.Error(), "maxmemory-policy noeviction") || !strings.Contains(err.Error(), "GATEWAY_REDIS_ALLOW_EVICTION=true")):
			t.Errorf("volatile-lru, not allowed: %v", err)
		case allow && (err != nil || !strings.Contains(logs.String(), "started anyway")):
			t.Errorf("volatile-lru, allowed: %v, logs %q", err, logs.String())
		}
	}
}
