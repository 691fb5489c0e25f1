// Package redisstate reads what a Redis deployment allows that the state
// kept in it depends on, and judges whether that state may be lost:
// persistence (AOF, RDB snapshots), the eviction policy under maxmemory, and
// replicas. It asks each master with CONFIG GET and INFO replication, and a
// Redis Cluster's nodes table or the Sentinels for the replicas each master
// has, down ones included. A server
// that refuses CONFIG (managed Redis often does) or INFO is reported as
// unknown, never as a fault; only a Redis that cannot be reached is.
package redisstate

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Topology is how the gateway reaches Redis.
type Topology string

const (
	Single   Topology = "single"   // one server (its replicas, if any, behind it)
	Sentinel Topology = "sentinel" // the master Sentinel names: replicated by design
	Cluster  Topology = "cluster"  // Redis Cluster: every master that owns slots
)

// Server is what one master allows.
type Server struct {
	Addr string
	// ConfigKnown: CONFIG GET answered; the four fields below are then set.
	ConfigKnown bool
	AOF         bool   // appendonly yes
	RDB         bool   // save has at least one rule
	MaxMemory   int64  // bytes; 0: no limit
	Policy      string // maxmemory-policy
	// ReplicasKnown: INFO replication answered; Replicas is then the
	// replicas connected and online.
	ReplicasKnown bool
	Replicas      int
	// Configured is the replicas the deployment has for this master,
	// connected or not: Cluster's nodes table counts a failed replica
	// too. Elsewhere it is Replicas.
	Configured int
}

// Report is one reading of a deployment.
type Report struct {
	At       time.Time
	Topology Topology
	// Servers are the masters, in address order; none when Err is set.
	Servers []Server
	// SentinelKnown: a Sentinel answered with the replicas it knows of the
	// master (counted in Configured, online or not).
	SentinelKnown bool
	// Err: Redis could not be reached (a network failure, not a refusal):
	// nothing is known.
	Err error
}

// Source is the deployment to read.
type Source struct {
	Redis    redis.UniversalClient
	Topology Topology
	// Label names a single server or Sentinel's master in reports (their
	// clients do not know a useful address); Cluster's masters are named
	// by their addresses.
	Label string
	// Sentinel, with Topology Sentinel, reaches the Sentinels (addresses,
	// master name, credentials): the replicas they know of the master,
	// online or not, count as configured. Nil: the master's online
	// replicas only.
	Sentinel *redis.FailoverOptions
}

// Inspect reads every master of src.
func Inspect(ctx context.Context, src Source) Report {
	r := Report{Topology: src.Topology}
	switch c := src.Redis.(type) {
	case *redis.ClusterClient:
		var mu sync.Mutex
		r.Err = c.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
			s, err := inspectServer(ctx, n, n.Options().Addr)
			mu.Lock()
			defer mu.Unlock()
			r.Servers = append(r.Servers, s)
			return err
		})
		if r.Err == nil {
			r.Err = configured(ctx, c, r.Servers)
		}
	case *redis.Client:
		s, err := inspectServer(ctx, c, src.Label)
		if err == nil && src.Topology == Sentinel && src.Sentinel != nil {
			if n, serr := sentinelReplicas(ctx, src.Sentinel); serr == nil {
				s.Configured, r.SentinelKnown = max(s.Configured, n), true
			}
		}
		r.Servers, r.Err = []Server{s}, err
	default:
		r.Err = fmt.Errorf("redisstate: cannot inspect a %T", src.Redis)
	}
	if r.Err != nil {
		r.Servers = nil
	}
	sortServers(r.Servers)
	return r
}

// inspectServer asks one server. Its error is a failure to reach it; a
// refusal leaves what was refused unknown.
func inspectServer(ctx context.Context, c *redis.Client, addr string) (Server, error) {
	s := Server{Addr: addr}
	cfg := map[string]string{}
	for _, name := range []string{"appendonly", "save", "maxmemory", "maxmemory-policy"} {
		m, err := c.ConfigGet(ctx, name).Result()
		if refused(err) {
			cfg = nil
			break
		}
		if err != nil {
			return s, err
		}
		v, ok := m[name]
		if !ok { // a server without the parameter: not Redis as we know it
			cfg = nil
			break
		}
		cfg[name] = v
	}
	if cfg != nil {
		max, err := strconv.ParseInt(cfg["maxmemory"], 10, 64)
		s.ConfigKnown = err == nil
		s.AOF, s.RDB, s.MaxMemory, s.Policy = cfg["appendonly"] == "yes", strings.TrimSpace(cfg["save"]) != "", max, cfg["maxmemory-policy"]
	}
	info, err := c.Info(ctx, "replication").Result()
	switch {
	case refused(err):
	case err != nil:
		return s, err
	default:
		s.Replicas, s.ReplicasKnown = onlineReplicas(info)
		s.Configured = s.Replicas
	}
	return s, nil
}

// refused reports an error the server answered (unknown command, no
// permission), as opposed to a failure to reach it.
func refused(err error) bool {
	var re redis.Error
	return err != nil && errors.As(err, &re) && !errors.Is(err, redis.Nil)
}

// onlineReplicas counts the replicas INFO replication lists as online on a
// master; ok is false when the text says nothing of replicas (not a
// master's, or not Redis's).
func onlineReplicas(info string) (n int, ok bool) {
	for _, line := range strings.Split(info, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "role:master":
			ok = true
		case strings.HasPrefix(line, "slave") && strings.Contains(line, ":ip=") && strings.Contains(line, "state=online"):
			n++
		}
	}
	return n, ok
}

// sentinelReplicas is how many replicas the first Sentinel that answers
// knows of the master, down ones included.
func sentinelReplicas(ctx context.Context, o *redis.FailoverOptions) (int, error) {
	err := errors.New("redisstate: no Sentinel address")
	for _, addr := range o.SentinelAddrs {
		sc := redis.NewSentinelClient(&redis.Options{Addr: addr, Username: o.SentinelUsername, Password: o.SentinelPassword,
			TLSConfig: o.TLSConfig, DialTimeout: o.DialTimeout, ContextTimeoutEnabled: true, MaxRetries: -1})
		var replicas []map[string]string
		replicas, err = sc.Replicas(ctx, o.MasterName).Result()
		_ = sc.Close()
		if err == nil {
			return len(replicas), nil
		}
	}
	return 0, err
}

// configured sets each master's Configured from Cluster's nodes table,
// where a replica stays listed while it is down.
func configured(ctx context.Context, c *redis.ClusterClient, servers []Server) error {
	nodes, err := c.ClusterNodes(ctx).Result()
	if refused(err) {
		return nil // the connected replicas stand
	}
	if err != nil {
		return err
	}
	addrOf, count := map[string]string{}, map[string]int{}
	for _, line := range strings.Split(nodes, "\n") {
		f := strings.Fields(line)
		if len(f) < 4 {
			continue
		}
		addr, _, _ := strings.Cut(f[1], "@")
		flags := "," + f[2] + ","
		switch {
		case strings.Contains(flags, ",master,"):
			addrOf[f[0]] = addr
		case strings.Contains(flags, ",slave,") || strings.Contains(flags, ",replica,"):
			count[f[3]]++
		}
	}
	for id, addr := range addrOf {
		for i := range servers {
			if servers[i].Addr == addr {
				servers[i].Configured = max(servers[i].Configured, count[id])
			}
		}
	}
	return nil
}

func sortServers(s []Server) {
	slices.SortFunc(s, func(a, b Server) int { return strings.Compare(a.Addr, b.Addr) })
}
