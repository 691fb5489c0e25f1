package redisstate

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Config configures a Watcher. Every zero value has a working default.
type Config struct {
	Source // what to read; Redis is required
	// Every is how often Run reads Redis again; zero means a minute.
	// Retry, how soon after a reading that could not reach Redis; zero
	// means 5 s.
	Every, Retry time.Duration
	// Timeout bounds each reading; zero means 3 s.
	Timeout time.Duration
	// After is Run's timer; nil means time.After (tests give their own).
	After func(time.Duration) <-chan time.Time
	Now   func() time.Time // nil means time.Now
	// OnReport is called with the reading before and the new one after
	// each reading (before is the zero Report at the first).
	OnReport func(before, after Report)
	// Metrics registers the metrics of the last reading (metrics.go); nil
	// registers none. WaitFor, when not nil, is reported beside them: how
	// many replicas each change of the control plane waits for.
	Metrics prometheus.Registerer
	WaitFor func() int
}

// Watcher reads a deployment now and then and keeps the last reading.
type Watcher struct {
	cfg  Config
	last atomic.Pointer[Report]
	mu   sync.Mutex // one reading at a time, so OnReport sees them in order
}

// NewWatcher returns a Watcher over cfg; nothing is read until Check or Run.
func NewWatcher(cfg Config) (*Watcher, error) {
	if cfg.Every <= 0 {
		cfg.Every = time.Minute
	}
	if cfg.Retry <= 0 {
		cfg.Retry = 5 * time.Second
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 3 * time.Second
	}
	if cfg.After == nil {
		cfg.After = time.After
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	w := &Watcher{cfg: cfg}
	if cfg.Metrics != nil {
		if err := cfg.Metrics.Register(collector{w}); err != nil {
			return nil, err
		}
	}
	return w, nil
}

// Check reads Redis now, keeps the reading and returns it.
func (w *Watcher) Check(ctx context.Context) Report {
	w.mu.Lock()
	defer w.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, w.cfg.Timeout)
	defer cancel()
	r := Inspect(ctx, w.cfg.Source)
	r.At = w.cfg.Now()
	before := w.Last()
	w.last.Store(&r)
	if w.cfg.OnReport != nil {
		w.cfg.OnReport(before, r)
	}
	return r
}

// Last is the last reading; the zero Report (unknown, no time) before the
// first.
func (w *Watcher) Last() Report {
	if r := w.last.Load(); r != nil {
		return *r
	}
	return Report{Topology: w.cfg.Topology}
}

// Run reads Redis every Every (Retry after a reading that could not reach
// it) until ctx ends. It reads first after the first wait: the caller has
// read at start.
func (w *Watcher) Run(ctx context.Context) {
	for {
		wait := w.cfg.Every
		if w.Last().Err != nil {
			wait = w.cfg.Retry
		}
		select {
		case <-ctx.Done():
			return
		case <-w.cfg.After(wait):
		}
		w.Check(ctx)
	}
}
