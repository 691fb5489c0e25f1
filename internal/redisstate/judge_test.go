package redisstate

import (
	"errors"
	"strings"
	"testing"
)

// The verdicts over the masters of a report: the weakest wins, a server
// that would not say makes the check unknown unless another is at risk.
func TestChecks(t *testing.T) {
	t.Parallel()
	aof := Server{Addr: "a:1", ConfigKnown: true, AOF: true, Policy: "noeviction", ReplicasKnown: true, Replicas: 1, Configured: 1}
	bare := Server{Addr: "b:1", ConfigKnown: true, Policy: "noeviction", ReplicasKnown: true}
	rdb := Server{Addr: "c:1", ConfigKnown: true, RDB: true, Policy: "noeviction", ReplicasKnown: true, Replicas: 2, Configured: 2}
	lru := Server{Addr: "d:1", ConfigKnown: true, AOF: true, Policy: "allkeys-lru", MaxMemory: 1 << 30, ReplicasKnown: true, Replicas: 1}
	volatile := Server{Addr: "e:1", ConfigKnown: true, AOF: true, Policy: "volatile-ttl", ReplicasKnown: true, Replicas: 1}
	hidden := Server{Addr: "f:1", ReplicasKnown: true, Replicas: 1, Configured: 1}
	silent := Server{Addr: "g:1"}
	for _, c := range []struct {
		name    string
		servers []Server
		err     error
		want    map[string]string // check: state/value
		why     map[string]string // check: a part of Why
	}{
		{"persisted and replicated", []Server{aof}, nil,
			map[string]string{Persistence: "ok/aof", Eviction: "ok/noeviction", Replicas: "ok/1"}, nil},
		{"bare", []Server{bare}, nil,
			map[string]string{Persistence: "at_risk/none", Eviction: "ok/noeviction", Replicas: "at_risk/0"},
			map[string]string{Persistence: "appendonly yes", Replicas: "no replica online"}},
		{"weakest of two", []Server{aof, rdb}, nil,
			map[string]string{Persistence: "ok/rdb", Eviction: "ok/noeviction", Replicas: "ok/1"}, nil},
		{"any eviction policy", []Server{aof, lru}, nil,
			map[string]string{Persistence: "ok/aof", Eviction: "at_risk/allkeys-lru", Replicas: "ok/1"},
			map[string]string{Eviction: "maxmemory-policy allkeys-lru (maxmemory 1073741824 bytes)"}},
		{"volatile too", []Server{volatile}, nil,
			map[string]string{Eviction: "at_risk/volatile-ttl"}, map[string]string{Eviction: "no maxmemory now"}},
		{"CONFIG refused", []Server{hidden}, nil,
			map[string]string{Persistence: "unknown/", Eviction: "unknown/", Replicas: "ok/1"}, nil},
		{"refused beside a risk", []Server{hidden, bare}, nil,
			map[string]string{Persistence: "at_risk/none", Replicas: "at_risk/0"}, nil},
		{"refused beside fine", []Server{hidden, aof}, nil,
			map[string]string{Persistence: "unknown/", Replicas: "ok/1"}, nil},
		{"nothing said", []Server{silent}, nil,
			map[string]string{Persistence: "unknown/", Eviction: "unknown/", Replicas: "unknown/"}, nil},
		{"unreachable", nil, errors.New("connection refused"),
			map[string]string{Persistence: "unknown/", Eviction: "unknown/", Replicas: "unknown/"}, nil},
	} {
		r := Report{Topology: Single, Servers: c.servers, Err: c.err}
		for _, chk := range r.Checks() {
			want, ok := c.want[chk.Name]
			if !ok {
				continue
			}
			if got := string(chk.State) + "/" + chk.Value; got != want {
				t.Errorf("%s: %s = %s, want %s", c.name, chk.Name, got, want)
			}
			if w := c.why[chk.Name]; (chk.State == AtRisk) != (chk.Why != "") || !strings.Contains(chk.Why, w) {
				t.Errorf("%s: %s why %q, want it to say %q", c.name, chk.Name, chk.Why, w)
			}
		}
	}
}

// Replicated: Sentinel by design; Cluster when a master has a replica,
// even one down; one server when a replica is online.
func TestReplicated(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name      string
		r         Report
		yes, know bool
	}{
		{"sentinel", Report{Topology: Sentinel}, true, true},
		{"sentinel unreachable", Report{Topology: Sentinel, Err: errors.New("down")}, true, true},
		{"sentinel knows a replica, down", Report{Topology: Sentinel, SentinelKnown: true, Servers: []Server{{ReplicasKnown: true, Configured: 1}}}, true, true},
		{"sentinel knows none", Report{Topology: Sentinel, SentinelKnown: true, Servers: []Server{{ReplicasKnown: true}}}, false, true},
		{"single with a replica", Report{Topology: Single, Servers: []Server{{ReplicasKnown: true, Replicas: 1, Configured: 1}}}, true, true},
		{"single alone", Report{Topology: Single, Servers: []Server{{ReplicasKnown: true}}}, false, true},
		{"single silent", Report{Topology: Single, Servers: []Server{{}}}, false, false},
		{"single unreachable", Report{Topology: Single, Err: errors.New("down")}, false, false},
		{"cluster, a replica down", Report{Topology: Cluster, Servers: []Server{{ReplicasKnown: true, Configured: 1}, {ReplicasKnown: true}}}, true, true},
		{"cluster alone", Report{Topology: Cluster, Servers: []Server{{ReplicasKnown: true}, {ReplicasKnown: true}}}, false, true},
	} {
		if yes, know := c.r.Replicated(); yes != c.yes || know != c.know {
			t.Errorf("%s: Replicated = %v, %v; want %v, %v", c.name, yes, know, c.yes, c.know)
		}
	}
}
