package tenants

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/redis/go-redis/v9"
)

// redisServer is a redis-server process of the test's own, to kill.
type redisServer struct {
	t    *testing.T
	port int
	cmd  *exec.Cmd
}

func startRedisServer(t *testing.T, port int) *redisServer {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		testenv.Unavailable(t, "redis-server binary", err)
	}
	if port == 0 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port = ln.Addr().(*net.TCPAddr).Port
		ln.Close()
	}
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--logfile", "")
	if err := cmd.Start(); err != nil {
		t.Fatalf("start redis-server: %v", err)
	}
	s := &redisServer{t: t, port: port, cmd: cmd}
	t.Cleanup(s.kill)
	c := redis.NewClient(&redis.Options{Addr: s.addr(), MaxRetries: -1})
	defer c.Close()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("redis-server on port %d not answering: %v", port, err)
		}
	}
}

func (s *redisServer) addr() string { return fmt.Sprintf("127.0.0.1:%d", s.port) }

func (s *redisServer) kill() {
	if s.cmd.ProcessState != nil {
		return
	}
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
}

// Redis killed under load: no decision fails, every one is local at the
// company's last known limit, and admission stays bounded by the local bucket.
// Redis restarted on the same port: the instance returns to it by itself.
func TestRedisKilledAndRestartedUnderLoad(t *testing.T) {
	srv := startRedisServer(t, 0)
	rdb := redis.NewClient(&redis.Options{Addr: srv.addr(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = rdb.Close() })
	retry := 200 * time.Millisecond
	logs := &logRecorder{}
	l := New(Config{Redis: rdb, RetryEvery: retry, RedisTimeout: 50 * time.Millisecond, Logger: slogOf(logs)})
	custom := Limit{Rate: 100, Burst: 10}
	ctx := context.Background()
	if err := l.SetLimit(ctx, "acme", ModeLive, custom); err != nil {
		t.Fatal(err)
	}

	// Local decisions take a microsecond; the pause keeps the record of them
	// small while still far above the limit.
	pause := 100 * time.Microsecond

	// Phase 1: Redis up.
	evs := hammer([]*Limiter{l}, 4, pause, "acme", ModeLive, time.Now().Add(300*time.Millisecond))
	for _, e := range evs {
		if e.err != nil || e.d.Local || e.d.Limit != custom {
			t.Fatalf("with Redis up: %+v, %v", e.d, e.err)
		}
	}

	// Phase 2: Redis killed.
	srv.kill()
	killed := time.Now()
	down := 1500 * time.Millisecond
	evs = hammer([]*Limiter{l}, 4, pause, "acme", ModeLive, killed.Add(down))
	local := 0
	for _, e := range evs {
		if e.err != nil {
			t.Fatalf("a decision failed with Redis down: %v", e.err)
		}
		if e.d.Local {
			local++
			if e.d.Limit != custom {
				t.Fatalf("local decision at %+v, want the last known %+v", e.d.Limit, custom)
			}
		}
	}
	if !l.Fallback() {
		t.Error("Fallback() = false with Redis down")
	}
	if local < len(evs)-8 { // only requests already on their way may have been decided by Redis
		t.Errorf("only %d of %d decisions local with Redis down", local, len(evs))
	}
	got := admitted(t, evs, killed, killed.Add(down))
	lo, hi := 0.9*custom.Rate*down.Seconds(), 1.05*(custom.Rate*down.Seconds()+float64(custom.Burst))
	t.Logf("Redis down %v: %d decisions, %d local, %d admitted, want within [%.0f, %.0f]", down, len(evs), local, got, lo, hi)
	if float64(got) < lo || float64(got) > hi {
		t.Errorf("admitted %d with Redis down for %v, want within [%.0f, %.0f]: neither refuse all nor admit unbounded", got, down, lo, hi)
	}

	// Phase 3: Redis back on the same port (empty: the override is gone).
	startRedisServer(t, srv.port)
	back := time.Now()
	evs = hammer([]*Limiter{l}, 4, pause, "acme", ModeLive, back.Add(retry+1500*time.Millisecond))
	var returned time.Time
	for _, e := range evs {
		if e.err != nil {
			t.Fatalf("a decision failed while Redis came back: %v", e.err)
		}
		if !e.d.Local && e.start.After(back) && (returned.IsZero() || e.end.Before(returned)) {
			returned = e.end
		}
	}
	if returned.IsZero() {
		t.Fatal("never returned to Redis")
	}
	t.Logf("returned to Redis %v after it was back (RetryEvery %v)", returned.Sub(back), retry)
	if l.Fallback() {
		t.Error("Fallback() = true with Redis back")
	}
	if d := firstDecision(t, l, "acme", ModeLive); d.Local || d.Limit != liveDef {
		t.Errorf("after the restart: %+v, want decided by the new Redis at the default", d)
	}
	// go-redis itself backs off dialling (once per second) after PoolSize
	// failed dials, hence the allowance beyond RetryEvery.
	if took := returned.Sub(back); took > retry+time.Second {
		t.Errorf("took %v to return to Redis, want within RetryEvery (%v) + go-redis's dial backoff", took, retry)
	}
	warns, infos := 0, 0
	for _, m := range logs.messages() {
		switch m {
		case "WARN tenants: Redis unreachable; deciding rate limits locally per instance":
			warns++
		case "INFO tenants: Redis reachable again; rate limits are global again":
			infos++
		}
	}
	if warns != 1 || infos != 1 {
		t.Errorf("logged %d entries into and %d out of fallback, want 1 each: %q", warns, infos, logs.messages())
	}
}
