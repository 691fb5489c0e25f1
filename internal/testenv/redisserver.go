package testenv

import (
	"context"
	"net"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisServer is a redis-server process of the test's own, to kill and
// restart: outage tests must never touch the shared Redis.
type RedisServer struct {
	Port int
	t    testing.TB
	dir  string // working directory: where SAVE writes, and a restart reads
	args []string
	cmd  *exec.Cmd
}

// StartRedisServer starts redis-server on 127.0.0.1:port (a free port when
// port is 0), without automatic persistence, and waits until it answers. It
// is killed when the test ends. Its tests stop it on purpose: go-redis's
// connection-failure lines about it are kept quiet (QuietRedisLog).
func StartRedisServer(t testing.TB, port int) *RedisServer {
	t.Helper()
	return StartRedisServerWith(t, port)
}

// StartRedisServerWith is StartRedisServer with more redis-server options,
// which override the defaults: "--appendonly", "yes" for a server that
// persists, "--rename-command", "CONFIG", "" for a managed one that hides
// its configuration.
func StartRedisServerWith(t testing.TB, port int, args ...string) *RedisServer {
	t.Helper()
	if port == 0 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port = ln.Addr().(*net.TCPAddr).Port
		ln.Close()
	}
	s := &RedisServer{Port: port, t: t, dir: t.TempDir(), args: args}
	QuietRedisLog(t, s.Addr())
	s.start()
	return s
}

// Restart starts the killed server again on the same port and directory: what
// an explicit SAVE wrote before the kill is there again, as with a
// production Redis that persists.
func (s *RedisServer) Restart() {
	s.t.Helper()
	s.Kill()
	s.start()
}

func (s *RedisServer) start() {
	t := s.t
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		Unavailable(t, "redis-server binary", err)
	}
	cmd := exec.Command(bin, append([]string{"--port", strconv.Itoa(s.Port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--logfile", "", "--dir", s.dir}, s.args...)...)
	if err := cmd.Start(); err != nil {
		t.Fatalf("start redis-server: %v", err)
	}
	s.cmd = cmd
	t.Cleanup(s.Kill)
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1})
	defer c.Close()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("redis-server on port %d not answering: %v", s.Port, err)
		}
	}
}

// Addr is the server's host:port.
func (s *RedisServer) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port)) }

// Kill stops the server at once (SIGKILL), as a crash would.
func (s *RedisServer) Kill() {
	if s.cmd.ProcessState != nil {
		return
	}
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
}
