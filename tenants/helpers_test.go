package tenants

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// logRecorder keeps the messages logged, to check what is said and how often.
type logRecorder struct {
	mu   sync.Mutex
	msgs []string
}

func (r *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *logRecorder) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msgs = append(r.msgs, rec.Level.String()+" "+rec.Message)
	return nil
}
func (r *logRecorder) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *logRecorder) WithGroup(string) slog.Handler      { return r }

func (r *logRecorder) messages() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.msgs...)
}

func slogOf(h slog.Handler) *slog.Logger { return slog.New(h) }

// newLimiter is New for tests about what Redis decides: a zero RedisTimeout
// means 10 s instead of 50 ms, so that a round trip slowed by a busy machine
// is waited for instead of turning the decision into a local one. Tests of
// the timeout itself set it.
func newLimiter(cfg Config) *Limiter {
	if cfg.RedisTimeout == 0 {
		cfg.RedisTimeout = 10 * time.Second
	}
	return New(cfg)
}

// downableMiniredis is testenv.Miniredis with a client that does not retry:
// once the test closes the server, a call fails at once instead of after
// go-redis's backoff between retries (seconds in all, which newLimiter's
// RedisTimeout would wait out).
func downableMiniredis(t *testing.T) (*redis.Client, *miniredis.Miniredis) {
	t.Helper()
	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr(), MaxRetries: -1})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb, mr
}
