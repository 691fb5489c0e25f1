package testenv

import (
	"context"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// The child test: a client of a port nothing listens on, asked until
// go-redis logs its dial failures (also from its own goroutines, after the
// test returns); quiet or not, by the parent's choice.
func TestRedisLogChild(t *testing.T) {
	mode := os.Getenv("TESTENV_REDISLOG_CHILD")
	if mode == "" {
		t.Skip("run by TestQuietRedisLog")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	if mode == "quiet" {
		QuietRedisLog(t, addr)
	}
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: 100 * time.Millisecond})
	defer c.Close()
	for range 20 {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		_ = c.Ping(ctx).Err()
		cancel()
	}
	t.Log("unrelated lines still print") // the filter drops connection failures only
}

// go-redis prints its dial failures unless the test asked for quiet: run
// the child both ways, in processes of their own (the logger is global).
func TestQuietRedisLog(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"loud", "quiet"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			quietRedisLogChild(t, mode)
		})
	}
}

func quietRedisLogChild(t *testing.T, mode string) {
	cmd := exec.Command(os.Args[0], "-test.run", "^TestRedisLogChild$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), "TESTENV_REDISLOG_CHILD="+mode)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s child: %v\n%s", mode, err, out)
	}
	printed := strings.Contains(string(out), "failed to dial") || strings.Contains(string(out), "connection refused")
	if printed != (mode == "loud") || !strings.Contains(string(out), "unrelated lines still print") {
		t.Errorf("%s: go-redis's dial failures printed: %v\n%s", mode, printed, out)
	}
}

func TestConnectionFailureFilter(t *testing.T) {
	t.Parallel()
	for msg, drop := range map[string]bool{
		"redis: connection pool: failed to dial after 5 attempts: dial tcp 127.0.0.1:1: connect: connection refused": true,
		"redis: discarding bad PubSub connection: read tcp 127.0.0.1:5->127.0.0.1:6: read: connection reset by peer": true,
		"sentinel: new master=\"gwmaster\" addr=\"127.0.0.1:27501\"":                                                 false,
	} {
		if connectionFailure(msg) != drop {
			t.Errorf("%q: dropped %v, want %v", msg, !drop, drop)
		}
	}
}
