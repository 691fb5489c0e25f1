// Package usage counts each company's API requests per day and per minute,
// mode and status class (and rate-limited requests apart), in Redis, for the
// platform team's console and the company's own dashboard, with an overview
// across companies (who is busy today and in the last hour).
// Counting is in memory on the request path; one pipelined batch a second
// writes the counts to Redis, so Redis sees one round trip per second per
// instance, not one per request. It knows nothing of HTTP or API keys.
package usage

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
	_ "time/tzdata" // Africa/Luanda must resolve on hosts without tzdata

	"github.com/invoicing-ao/gateway/invoicing"
	"github.com/redis/go-redis/v9"
)

// ErrUnavailable wraps the error of a Redis that cannot answer.
var ErrUnavailable = invoicing.Define(invoicing.Error{Kind: invoicing.Unavailable, Code: "usage_unavailable", Title: "Usage unavailable", Detail: "Usage cannot be read right now; retry later.", Message: "usage: Redis unavailable"})

// Config configures a Counter. Every zero value has a working default.
type Config struct {
	// Redis keeps the counts; required. Each company's days share one hash
	// slot (the company id is the hash tag).
	Redis redis.UniversalClient
	// Prefix starts every key; zero means "usage:". No braces.
	Prefix string
	// FlushEvery is how often counts are written; zero means 1s.
	FlushEvery time.Duration
	// TTL is how long a day's counts are kept; zero means 400 days (a year
	// and its comparison month).
	TTL time.Duration
	// MaxPending bounds the distinct counters held in memory (while Redis
	// fails, they wait for the next flush); zero means 100,000. Counts past
	// it are dropped, and the drop is logged.
	MaxPending int
	// Now is the clock that decides the day; nil means time.Now.
	Now func() time.Time
	// Logger; nil means slog.Default().
	Logger *slog.Logger
}

// Day boundaries are Luanda's, like every date of the API.
var luanda = func() *time.Location {
	if loc, err := time.LoadLocation("Africa/Luanda"); err == nil {
		return loc
	}
	return time.FixedZone("WAT", 3600)
}()

// counter identifies one count: a company's requests in a minute, in a mode,
// of a status class; limited counts the 429s (also counted in class 4).
type counter struct {
	company string
	minute  int64 // minutes since 1970-01-01 in Luanda
	mode    uint8 // invoicing.Mode.Index
	class   uint8 // status / 100
	limited bool  // status 429
}

// Counter counts requests. It is safe for concurrent use; Close flushes.
type Counter struct {
	rdb        redis.UniversalClient
	prefix     string
	every, ttl time.Duration
	max        int
	now        func() time.Time
	log        *slog.Logger

	mu      sync.Mutex
	pending map[counter]int64
	dropped int64

	flushMu   sync.Mutex // one flush at a time
	done      chan struct{}
	stopped   chan struct{}
	closeOnce sync.Once
}

// New returns a Counter and starts its flushing goroutine.
func New(cfg Config) *Counter {
	if cfg.Redis == nil {
		panic("usage: Config.Redis is required")
	}
	if strings.ContainsAny(cfg.Prefix, "{}") {
		panic("usage: Config.Prefix must not contain braces")
	}
	c := &Counter{
		rdb: cfg.Redis, prefix: cfg.Prefix, every: cfg.FlushEvery, ttl: cfg.TTL, max: cfg.MaxPending,
		now: cfg.Now, log: cfg.Logger, pending: make(map[counter]int64),
		done: make(chan struct{}), stopped: make(chan struct{}),
	}
	if c.prefix == "" {
		c.prefix = "usage:"
	}
	if c.every <= 0 {
		c.every = time.Second
	}
	if c.ttl <= 0 {
		c.ttl = 400 * 24 * time.Hour
	}
	if c.max <= 0 {
		c.max = 100_000
	}
	if c.now == nil {
		c.now = time.Now
	}
	if c.log == nil {
		c.log = slog.Default()
	}
	go c.loop()
	return c
}

// Add counts one request of the company (a canonical id, see
// invoicing.ParseCompanyID) in the mode that was answered with status. It
// never blocks on Redis; anything else than a company id, a mode and a status
// is ignored.
func (c *Counter) Add(companyID string, mode invoicing.Mode, status int) {
	if !mode.Valid() || status < 100 || status > 599 || !canonical(companyID) {
		return
	}
	k := counter{company: companyID, minute: minuteOf(c.now()), mode: uint8(mode.Index()), class: uint8(status / 100)}
	c.mu.Lock()
	c.count(k)
	if status == 429 {
		k.limited = true
		c.count(k)
	}
	c.mu.Unlock()
}

// count adds one to k, under c.mu.
func (c *Counter) count(k counter) {
	if _, ok := c.pending[k]; !ok && len(c.pending) >= c.max {
		c.dropped++
		return
	}
	c.pending[k]++
}

func (c *Counter) loop() {
	defer close(c.stopped)
	t := time.NewTicker(c.every)
	defer t.Stop()
	for {
		select {
		case <-c.done:
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(context.Background(), max(c.every, 2*time.Second))
			if err := c.Flush(ctx); err != nil {
				c.log.Warn("usage: flush failed; counts kept for the next one", "error", err)
			}
			cancel()
		}
	}
}

// canonical reports whether id is a company id as invoicing.ParseCompanyID
// makes them: the hash tag of every key of the company.
func canonical(id string) bool {
	c, ok := invoicing.CanonicalUUID(id)
	return ok && c == id
}

// Flush writes the pending counts in one pipeline. Counts whose command
// failed are kept for the next flush; a reply lost after Redis applied a
// command can therefore count it twice, which is preferred to losing the
// counts of every Redis hiccup.
func (c *Counter) Flush(ctx context.Context) error {
	c.flushMu.Lock()
	defer c.flushMu.Unlock()
	c.mu.Lock()
	batch, dropped := c.pending, c.dropped
	c.pending, c.dropped = make(map[counter]int64, len(batch)), 0
	c.mu.Unlock()
	if dropped > 0 {
		c.log.Warn("usage: too many distinct counters pending; counts dropped", "dropped", dropped)
	}
	if len(batch) == 0 {
		return nil
	}
	type sent struct {
		k   counter
		n   int64
		cmd *redis.IntCmd
	}
	pipe := c.rdb.Pipeline()
	cmds := make([]sent, 0, len(batch))
	w := writer{pipe: pipe, ctx: ctx, expiring: make(map[string]bool)}
	for k, n := range batch {
		cmds = append(cmds, sent{k, n, c.write(&w, k, n)})
	}
	_, err := pipe.Exec(ctx)
	if err == nil {
		return nil
	}
	c.mu.Lock()
	for _, s := range cmds {
		if s.cmd.Err() != nil {
			if _, ok := c.pending[s.k]; !ok && len(c.pending) >= c.max {
				c.dropped += s.n
				continue
			}
			c.pending[s.k] += s.n
		}
	}
	c.mu.Unlock()
	return fmt.Errorf("%w: flush: %w", ErrUnavailable, err)
}

// Close stops the periodic flush and flushes what is pending, within ctx.
func (c *Counter) Close(ctx context.Context) error {
	c.closeOnce.Do(func() { close(c.done) })
	<-c.stopped
	if err := c.Flush(ctx); err != nil {
		c.log.Warn("usage: final flush failed; these counts are lost", "error", err)
		return err
	}
	return nil
}
