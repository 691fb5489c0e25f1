package testenv

import (
	"context"
	"fmt"
	"log"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
)

// go-redis logs, on its own, each failed dial and reconnect ("redis:
// connection pool: failed to dial after 5 attempts: ... connection
// refused") to stderr. Tests that stop Redis on purpose expect those
// failures; printed, they read as failures of the suite.

var (
	quietInstall sync.Once
	quietMu      sync.RWMutex
	quietAddrs   = map[string]bool{} // host:port made to fail on purpose
)

// redisLogFilter is the logger installed, once, for the whole process: the
// go-redis default (stderr, "redis: " prefix) except that it drops the lines
// of a connection that fails to an address a test made fail on purpose.
// The logger is process-global, and go-redis's reconnecting goroutines log
// after their test has returned: so the filter is by address, for the rest
// of the process, rather than a discard logger swapped in for a test's
// duration, which would either miss those late lines or hide other tests'
// unexpected ones.
type redisLogFilter struct{ l *log.Logger }

func (f redisLogFilter) Printf(_ context.Context, format string, v ...any) {
	msg := fmt.Sprintf(format, v...)
	if connectionFailure(msg) && aboutQuietAddr(msg) {
		return
	}
	_ = f.l.Output(2, msg)
}

func aboutQuietAddr(msg string) bool {
	quietMu.RLock()
	defer quietMu.RUnlock()
	for a := range quietAddrs {
		if strings.Contains(msg, a) {
			return true
		}
	}
	return false
}

// connectionFailure reports a go-redis line about a connection that could
// not be made or was lost.
func connectionFailure(msg string) bool {
	for _, s := range []string{"failed to dial", "connection refused", "connection reset", "broken pipe", "EOF",
		"i/o timeout", "use of closed network connection", "discarding bad PubSub connection"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// QuietRedisLog silences go-redis's lines about failing connections to
// addrs (host:port), which the test stops, cuts or refuses on purpose: a
// reader of the suite's output would take them for failures. Lines about
// other addresses, and other lines, still print.
func QuietRedisLog(t testing.TB, addrs ...string) {
	t.Helper()
	if len(addrs) == 0 {
		t.Fatal("QuietRedisLog: which addresses fail on purpose?")
	}
	quietInstall.Do(func() {
		redis.SetLogger(redisLogFilter{log.New(os.Stderr, "redis: ", log.LstdFlags|log.Lshortfile)})
	})
	quietMu.Lock()
	defer quietMu.Unlock()
	for _, a := range addrs {
		quietAddrs[a] = true
	}
}
