// Package shape records the shape of each company's traffic: the requests
// it offered its rate limit in each second, per mode, summed across every
// gateway instance, in Redis, kept 48 hours by the second and 30 days
// summarized by the minute; and reads it back, for what-if replays of
// another limit and for the distribution of its rates. It knows nothing of
// HTTP, of keys or of limits: the counts come from a Source (the limiter).
package shape

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/invoicing-ao/gateway/invoicing"
)

// ErrUnavailable wraps the error of a Redis that cannot answer. The
// recorded traffic is usage, and says so with usage's code.
var ErrUnavailable = invoicing.Define(invoicing.Error{Kind: invoicing.Unavailable, Code: "usage_unavailable", Title: "Usage unavailable",
	Detail: "The recorded traffic cannot be read right now; retry later.", Message: "shape: Redis unavailable"})

// Source gives the requests offered per company, mode and second (unix)
// since its last call (tenants.Limiter.TakeOffered): those refused of them,
// and how many came in each sixteenth of the second (Slots of them; nil
// when not known). A second may come in several counts, to be added.
type Source interface {
	TakeOffered(yield func(companyID string, m invoicing.Mode, second int64, offered, refused int, slots []uint16))
}

// Slots is how many parts of a second the requests are recorded in.
const Slots = 16

// Config configures a Store. Every zero value but Redis has a working
// default.
type Config struct {
	// Redis keeps the recording; required.
	Redis redis.UniversalClient
	// Prefix starts every key; zero means "shape:". No braces.
	Prefix string
	// FlushEvery is how often Run writes the counts and summarizes the
	// blocks due; zero means 1s.
	FlushEvery time.Duration
	// MaxPending bounds the distinct company-mode-seconds held in memory
	// while Redis fails; zero means 100,000. Counts past it are dropped,
	// and the drop is logged.
	MaxPending int
	// AddByScript adds the counts with a script instead of BITFIELD, for a
	// Redis without BITFIELD (miniredis, the demo's); false means BITFIELD,
	// which costs Redis far less.
	AddByScript bool
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Logger; nil means slog.Default().
	Logger *slog.Logger
}

// Store records traffic (Run, Flush) and reads it (Series, Peaks). It is
// safe for concurrent use.
type Store struct {
	rdb    redis.UniversalClient
	prefix string
	every  time.Duration
	max    int
	now    func() time.Time
	log    *slog.Logger
	script bool // AddByScript

	flushMu sync.Mutex // one flush at a time; guards what follows
	pending map[cell]*pendingSecond
	dropped int64
	made    map[blockRef]int64 // blocks this instance made whole and queued to summarize: when (unix s)
	madeAt  int64              // the block when made was last pruned
}

// cell is one company's requests in one second and mode.
type cell struct {
	company string
	mode    invoicing.Mode
	sec     int64
}

// pendingSecond is one cell's counts waiting to be written.
type pendingSecond struct {
	n, refused uint32
	slots      [Slots]uint32
}

// blockRef is one company's block in a mode.
type blockRef struct {
	company string
	mode    invoicing.Mode
	block   int64
}

// New returns a Store. It panics on a Config without Redis or with braces
// in its prefix: mistakes of the program, not of the deployment.
func New(cfg Config) *Store {
	if cfg.Redis == nil {
		panic("shape: Config.Redis is required")
	}
	if strings.ContainsAny(cfg.Prefix, "{}") {
		panic("shape: Config.Prefix must not contain braces")
	}
	s := &Store{rdb: cfg.Redis, prefix: cfg.Prefix, every: cfg.FlushEvery, max: cfg.MaxPending, now: cfg.Now, log: cfg.Logger, script: cfg.AddByScript,
		pending: map[cell]*pendingSecond{}, made: map[blockRef]int64{}}
	if s.prefix == "" {
		s.prefix = "shape:"
	}
	if s.every <= 0 {
		s.every = time.Second
	}
	if s.max <= 0 {
		s.max = 100_000
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	return s
}

// Run takes src's counts and writes them every FlushEvery, and summarizes
// the blocks due, until ctx ends; then it writes what is left, within a few
// seconds.
func (s *Store) Run(ctx context.Context, src Source) {
	t := time.NewTicker(s.every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			if err := s.Flush(fctx, src); err != nil {
				s.log.Warn("shape: last flush failed; these counts are lost", "error", err)
			}
			return
		case <-t.C:
			fctx, cancel := context.WithTimeout(ctx, max(s.every, 2*time.Second))
			if err := s.Flush(fctx, src); err != nil {
				s.log.Warn("shape: flush failed; counts kept for the next one", "error", err)
			}
			cancel()
		}
	}
}

// unavailable wraps a Redis error.
func unavailable(op string, err error) error {
	return fmt.Errorf("%w: %s: %w", ErrUnavailable, op, err)
}
