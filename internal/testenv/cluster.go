package testenv

import (
	"context"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisCluster starts a Redis Cluster of masters (3 when masters < 3, no
// replicas) on loopback ports, as child processes of the test, and returns
// the seed addresses of its nodes. Every node is killed and its files removed
// when the test ends. Without redis-server and redis-cli on PATH the test is
// skipped (failed under CI=true).
//
// Nothing is persisted (--save "", no AOF): the cluster lives as long as the
// test. Ports are chosen at random in 20000-29999 and checked free together
// with their cluster bus port (+10000); a port taken between the check and
// the start is retried.
func RedisCluster(t testing.TB, masters int) []string {
	t.Helper()
	if masters < 3 {
		masters = 3
	}
	for _, bin := range []string{"redis-server", "redis-cli"} {
		if _, err := exec.LookPath(bin); err != nil {
			Unavailable(t, "Redis Cluster ("+bin+")", err)
		}
	}
	dir := t.TempDir()
	addrs := make([]string, 0, masters)
	for i := 0; i < masters; i++ {
		addrs = append(addrs, startClusterNode(t, dir))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	args := append([]string{"--cluster", "create"}, addrs...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.CommandContext(ctx, "redis-cli", args...).CombinedOutput(); err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	waitClusterOK(ctx, t, addrs)
	return addrs
}

// RedisClusterClient starts a cluster (see RedisCluster) and returns a client
// of it with ContextTimeoutEnabled, as the gateway builds it; closed when the
// test ends.
func RedisClusterClient(t testing.TB) *redis.ClusterClient {
	t.Helper()
	addrs := RedisCluster(t, 3)
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// startClusterNode starts one cluster-enabled redis-server and waits until it
// answers PING.
func startClusterNode(t testing.TB, dir string) string {
	t.Helper()
	return startRedisProcess(t, dir, func(p string) []string {
		return []string{
			"--port", p, "--bind", "127.0.0.1",
			"--cluster-enabled", "yes",
			"--cluster-config-file", filepath.Join(dir, "nodes-"+p+".conf"),
			"--cluster-node-timeout", "5000",
			"--dir", dir, "--save", "", "--appendonly", "no", "--daemonize", "no",
		}
	})
}

// startRedisProcess starts redis-server with args(port) on a free loopback
// port, waits until it answers PING, and kills it when the test ends.
func startRedisProcess(t testing.TB, dir string, args func(port string) []string) string {
	t.Helper()
	return startRedisProc(t, dir, args).Addr
}

// redisProc is a redis-server of the test's own: its address, and its
// process to stop (SIGSTOP), continue or kill.
type redisProc struct {
	Addr string
	proc *os.Process
}

// startRedisProc is startRedisProcess, keeping the process.
func startRedisProc(t testing.TB, dir string, args func(port string) []string) redisProc {
	t.Helper()
	for attempt := 0; attempt < 20; attempt++ {
		port := 20000 + rand.IntN(10000)
		if !portFree(port) || !portFree(port+10000) {
			continue
		}
		p := strconv.Itoa(port)
		log := &SyncBuffer{}
		cmd := exec.Command("redis-server", args(p)...)
		cmd.Stdout, cmd.Stderr = log, log
		if err := cmd.Start(); err != nil {
			t.Fatalf("start redis-server: %v", err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			<-exited
		})
		addr := "127.0.0.1:" + p
		if waitPing(addr, exited) {
			return redisProc{Addr: addr, proc: cmd.Process}
		}
		// Lost the port to someone else (or the node died): try another.
		t.Logf("redis-server on %s did not start, retrying: %s", addr, strings.TrimSpace(log.String()))
	}
	t.Fatalf("could not start a redis-server after 20 attempts")
	return redisProc{}
}

// waitPing reports whether addr answers PING within 5 s, giving up early if
// the process exits.
func waitPing(addr string, exited <-chan error) bool {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	defer c.Close()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return false
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

// waitClusterOK waits until every node reports cluster_state:ok, so that the
// first command of the test does not meet a CLUSTERDOWN.
func waitClusterOK(ctx context.Context, t testing.TB, addrs []string) {
	t.Helper()
	for _, addr := range addrs {
		c := redis.NewClient(&redis.Options{Addr: addr})
		for {
			info, err := c.ClusterInfo(ctx).Result()
			if err == nil && strings.Contains(info, "cluster_state:ok") {
				break
			}
			if ctx.Err() != nil {
				_ = c.Close()
				t.Fatalf("cluster node %s never reached cluster_state:ok: %v\n%s", addr, err, info)
			}
			time.Sleep(50 * time.Millisecond)
		}
		_ = c.Close()
	}
}

func portFree(port int) bool {
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		return false
	}
	_ = l.Close()
	return true
}

// RedisSentinel starts a Redis server and one Sentinel monitoring it as
// master "gwmaster", as child processes of the test on loopback ports, and
// returns the Sentinel's address and the master's name. Both are killed and
// their files removed when the test ends.
func RedisSentinel(t testing.TB) (sentinelAddr, master string) {
	t.Helper()
	for _, bin := range []string{"redis-server"} {
		if _, err := exec.LookPath(bin); err != nil {
			Unavailable(t, "Redis Sentinel ("+bin+")", err)
		}
	}
	dir := t.TempDir()
	masterAddr := startRedisProcess(t, dir, func(p string) []string {
		return []string{"--port", p, "--bind", "127.0.0.1", "--dir", dir, "--save", "", "--appendonly", "no"}
	})
	_, masterPort, _ := net.SplitHostPort(masterAddr)
	master = "gwmaster"
	sentinelAddr = startRedisProcess(t, dir, func(p string) []string {
		conf := filepath.Join(dir, "sentinel-"+p+".conf")
		body := "port " + p + "\nbind 127.0.0.1\ndir " + dir + "\n" +
			"sentinel monitor " + master + " 127.0.0.1 " + masterPort + " 1\n"
		if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return []string{conf, "--sentinel"}
	})
	// Wait until the Sentinel knows the master.
	c := redis.NewSentinelClient(&redis.Options{Addr: sentinelAddr})
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		addr, err := c.GetMasterAddrByName(ctx, master).Result()
		cancel()
		if err == nil && len(addr) == 2 && addr[1] == masterPort {
			return sentinelAddr, master
		}
		if time.Now().After(deadline) {
			t.Fatalf("sentinel %s never reported master %s: %v %v", sentinelAddr, master, addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
