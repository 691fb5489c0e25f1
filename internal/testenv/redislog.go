package testenv

import (
	"context"
	"fmt"
	"log"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
)

// go-redis logs, on its own, each failed dial and reconnect ("redis:
// connection pool: failed to dial after 5 attempts: ... connection
// refused") to stderr. Tests that stop Redis on purpose expect those
// failures; printed, they read as failures of the suite.

var (
	quietInstall sync.Once
	quietTests   atomic.Int32
)

// redisLogFilter is the logger installed, once, for the whole process: the
// go-redis default (stderr, "redis: " prefix) except that, while at least
// one test asked for quiet, it drops the lines of a connection that fails.
// The logger is process-global: a filter, rather than a discard logger
// swapped in and out, keeps other tests' unexpected Redis lines visible and
// leaves nothing to restore when tests overlap.
type redisLogFilter struct{ l *log.Logger }

func (f redisLogFilter) Printf(_ context.Context, format string, v ...any) {
	msg := fmt.Sprintf(format, v...)
	if quietTests.Load() > 0 && connectionFailure(msg) {
		return
	}
	_ = f.l.Output(2, msg)
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

// QuietRedisLog silences go-redis's connection-failure lines until the test
// ends: for tests that stop, cut or refuse Redis on purpose.
func QuietRedisLog(t testing.TB) {
	quietInstall.Do(func() {
		redis.SetLogger(redisLogFilter{log.New(os.Stderr, "redis: ", log.LstdFlags|log.Lshortfile)})
	})
	quietTests.Add(1)
	t.Cleanup(func() { quietTests.Add(-1) })
}
