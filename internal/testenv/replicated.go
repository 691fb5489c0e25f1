package testenv

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// ReplicatedRedis is a Redis master, one replica and a Sentinel watching
// them, as child processes of the test. The replica replicates through
// Link, a FaultProxy: Link.Pause holds back what the master sends it (the
// replica lags, and acknowledges nothing), and Failover drops what is held,
// as a master that dies before its last writes left it would. The failover
// of a real deployment loses exactly those writes; here the test decides
// which they are.
type ReplicatedRedis struct {
	Sentinel string      // the Sentinel's address
	Name     string      // the master's name at the Sentinel
	Master   string      // the first master's address
	Replica  string      // the replica's address: the master after Failover
	Link     *FaultProxy // the replica's connection to the master

	t      testing.TB
	master redisProc
}

// RedisReplicated starts a ReplicatedRedis and waits until the replica is
// in sync and the Sentinel knows both. Everything is killed and removed
// when the test ends. Without redis-server the test is skipped (failed
// under CI=true).
func RedisReplicated(t testing.TB) *ReplicatedRedis {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		Unavailable(t, "Redis replication (redis-server)", err)
	}
	dir := t.TempDir()
	r := &ReplicatedRedis{Name: "gwmaster", t: t}
	// No delay before a full sync: the replica is in sync at once.
	r.master = startRedisProc(t, dir, func(p string) []string {
		return []string{"--port", p, "--bind", "127.0.0.1", "--dir", dir, "--save", "", "--appendonly", "no",
			"--repl-diskless-sync-delay", "0"}
	})
	r.Master = r.master.Addr
	r.Link = NewFaultProxy(t, r.Master)
	linkHost, linkPort, _ := net.SplitHostPort(r.Link.Addr())
	replicaDir := filepath.Join(dir, "replica")
	if err := os.Mkdir(replicaDir, 0o700); err != nil {
		t.Fatal(err)
	}
	r.Replica = startRedisProcess(t, replicaDir, func(p string) []string {
		return []string{"--port", p, "--bind", "127.0.0.1", "--dir", replicaDir, "--save", "", "--appendonly", "no",
			"--replicaof", linkHost, linkPort}
	})
	QuietRedisLog(t, r.Master) // Failover kills it on purpose
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	waitOnlineReplicas(ctx, t, r.Master, 1)
	// The Sentinel starts after the replica is attached, so that its first
	// look at the master already lists the replica.
	_, masterPort, _ := net.SplitHostPort(r.Master)
	r.Sentinel = startRedisProcess(t, dir, func(p string) []string {
		conf := filepath.Join(dir, "sentinel-"+p+".conf")
		// The failover timeout outlasts any test (go test's -timeout is
		// 15 minutes): a Sentinel points a replica that replicates from
		// another address than the master's (here Link's) at the master
		// itself once the replica has been so for the failover timeout (3
		// minutes by default), and from then on Link held nothing back. A
		// test slowed by a busy machine passed that mark and saw changes
		// confirmed that the paused Link should have kept from the replica.
		body := "port " + p + "\nbind 127.0.0.1\ndir " + dir + "\n" +
			"sentinel monitor " + r.Name + " 127.0.0.1 " + masterPort + " 1\n" +
			"sentinel failover-timeout " + r.Name + " 3600000\n"
		if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return []string{conf, "--sentinel"}
	})
	sc := redis.NewSentinelClient(&redis.Options{Addr: r.Sentinel})
	defer sc.Close()
	for {
		replicas, err := sc.Replicas(ctx, r.Name).Result()
		if err == nil && len(replicas) == 1 && replicas[0]["name"] == r.Replica && replicas[0]["flags"] == "slave" {
			return r
		}
		if ctx.Err() != nil {
			t.Fatalf("the Sentinel never saw replica %s in sync: %v %v", r.Replica, replicas, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Client is a Sentinel client of the current master, with
// ContextTimeoutEnabled as the gateway builds it; closed when the test ends.
func (r *ReplicatedRedis) Client() *redis.Client {
	c := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: r.Name, SentinelAddrs: []string{r.Sentinel}, ContextTimeoutEnabled: true})
	r.t.Cleanup(func() { _ = c.Close() })
	return c
}

// Direct is a client of one server (addr), bypassing the Sentinel: to look
// at what the master or the replica holds.
func (r *ReplicatedRedis) Direct(addr string) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: addr})
	r.t.Cleanup(func() { _ = c.Close() })
	return c
}

// Synced waits until the replica has everything the master has now.
func (r *ReplicatedRedis) Synced() {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := redis.NewClient(&redis.Options{Addr: r.Master})
	defer c.Close()
	conn := c.Conn()
	defer conn.Close()
	// WAIT vouches for this connection's writes, and so for all before.
	if err := conn.Set(ctx, "testenv:synced", time.Now().UnixNano(), 0).Err(); err != nil {
		r.t.Fatalf("write to the master: %v", err)
	}
	if n, err := conn.Wait(ctx, 1, 50*time.Second).Result(); err != nil || n != 1 {
		r.t.Fatalf("the replica never caught up: WAIT = %d, %v", n, err)
	}
}

// Failover loses the master with what it has not yet sent the replica
// (Link's held bytes are dropped, the master killed), has the Sentinel
// promote the replica, and waits until the Sentinel names it and it acts as
// master.
func (r *ReplicatedRedis) Failover() {
	r.t.Helper()
	r.Link.Cut()
	_ = r.master.proc.Kill()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	sc := redis.NewSentinelClient(&redis.Options{Addr: r.Sentinel})
	defer sc.Close()
	promoted := redis.NewClient(&redis.Options{Addr: r.Replica})
	defer promoted.Close()
	var last error
	for {
		// Forced: no quorum, no waiting for the master to be seen down. A
		// failover already running answers INPROG; no replica to promote
		// yet (its state not refreshed), NOGOODSLAVE: asked again.
		if err := sc.Failover(ctx, r.Name).Err(); err != nil && !strings.Contains(err.Error(), "INPROG") {
			last = err
		}
		addr, err := sc.GetMasterAddrByName(ctx, r.Name).Result()
		if err == nil && len(addr) == 2 && net.JoinHostPort(addr[0], addr[1]) == r.Replica {
			if role, err := promoted.Do(ctx, "ROLE").Slice(); err == nil && len(role) > 0 && role[0] == "master" {
				return
			}
		}
		if ctx.Err() != nil {
			r.t.Fatalf("the Sentinel never promoted %s: %v (last failover answer: %v)", r.Replica, addr, last)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitOnlineReplicas waits until the master at addr has n replicas online.
func waitOnlineReplicas(ctx context.Context, t testing.TB, addr string, n int) {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	for {
		info, err := c.Info(ctx, "replication").Result()
		if err == nil && strings.Count(info, "state=online") >= n {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("master %s never had %d replicas online: %v\n%s", addr, n, err, info)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// ReplicatedCluster is a Redis Cluster of three masters with one replica
// each, as child processes of the test.
type ReplicatedCluster struct {
	Addrs []string // every node, masters and replicas
	t     testing.TB
	procs map[string]*os.Process
}

// RedisClusterReplicated starts a ReplicatedCluster and waits until every
// node reports cluster_state:ok and every master has its replica online.
// Without redis-server and redis-cli the test is skipped (failed under
// CI=true).
func RedisClusterReplicated(t testing.TB) *ReplicatedCluster {
	t.Helper()
	for _, bin := range []string{"redis-server", "redis-cli"} {
		if _, err := exec.LookPath(bin); err != nil {
			Unavailable(t, "Redis Cluster ("+bin+")", err)
		}
	}
	dir := t.TempDir()
	c := &ReplicatedCluster{t: t, procs: map[string]*os.Process{}}
	for i := 0; i < 6; i++ {
		p := startRedisProc(t, dir, func(p string) []string {
			return []string{
				"--port", p, "--bind", "127.0.0.1",
				"--cluster-enabled", "yes",
				"--cluster-config-file", filepath.Join(dir, "nodes-"+p+".conf"),
				"--cluster-node-timeout", "5000",
				"--dir", dir, "--save", "", "--appendonly", "no", "--daemonize", "no",
				"--repl-diskless-sync-delay", "0",
			}
		})
		c.Addrs = append(c.Addrs, p.Addr)
		c.procs[p.Addr] = p.proc
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	args := append([]string{"--cluster", "create"}, c.Addrs...)
	args = append(args, "--cluster-replicas", "1", "--cluster-yes")
	if out, err := exec.CommandContext(ctx, "redis-cli", args...).CombinedOutput(); err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	waitClusterOK(ctx, t, c.Addrs)
	for _, addr := range c.Addrs {
		n := redis.NewClient(&redis.Options{Addr: addr})
		role, err := n.Do(ctx, "ROLE").Slice()
		_ = n.Close()
		if err != nil {
			t.Fatalf("ROLE of %s: %v", addr, err)
		}
		if role[0] == "master" {
			waitOnlineReplicas(ctx, t, addr, 1)
		}
	}
	return c
}

// Client is a cluster client with ContextTimeoutEnabled, as the gateway
// builds it; closed when the test ends.
func (c *ReplicatedCluster) Client() *redis.ClusterClient {
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs, ContextTimeoutEnabled: true})
	c.t.Cleanup(func() { _ = cc.Close() })
	return cc
}

// ReplicaOf is the address of the replica of the master at addr.
func (c *ReplicatedCluster) ReplicaOf(addr string) string {
	c.t.Helper()
	n := redis.NewClient(&redis.Options{Addr: addr})
	defer n.Close()
	info, err := n.Info(context.Background(), "replication").Result()
	if err != nil {
		c.t.Fatalf("INFO replication of %s: %v", addr, err)
	}
	for _, line := range strings.Split(info, "\n") {
		if !strings.HasPrefix(line, "slave0:") {
			continue
		}
		var ip, port string
		for _, kv := range strings.Split(strings.TrimSpace(strings.TrimPrefix(line, "slave0:")), ",") {
			k, v, _ := strings.Cut(kv, "=")
			switch k {
			case "ip":
				ip = v
			case "port":
				port = v
			}
		}
		return net.JoinHostPort(ip, port)
	}
	c.t.Fatalf("master %s has no replica:\n%s", addr, info)
	return ""
}

// Stop freezes the node at addr (SIGSTOP): it keeps its connections but
// answers and acknowledges nothing until Continue.
func (c *ReplicatedCluster) Stop(addr string) { c.signal(addr, syscall.SIGSTOP) }

// Continue lets a stopped node run again (SIGCONT).
func (c *ReplicatedCluster) Continue(addr string) { c.signal(addr, syscall.SIGCONT) }

func (c *ReplicatedCluster) signal(addr string, sig os.Signal) {
	c.t.Helper()
	p, ok := c.procs[addr]
	if !ok {
		c.t.Fatalf("no node %s", addr)
	}
	if err := p.Signal(sig); err != nil {
		c.t.Fatalf("signal %v to %s: %v", sig, addr, err)
	}
}
