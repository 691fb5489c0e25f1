package events

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/trace"

	"github.com/invoicing-ao/gateway/internal/durable"
	"github.com/invoicing-ao/gateway/internal/tracing"
	"github.com/invoicing-ao/gateway/invoicing"
)

// Config configures a Service. Every zero value has a working default.
type Config struct {
	// Redis keeps endpoints, the queue and the delivery log; required.
	Redis redis.UniversalClient
	// Prefix starts every Redis key; zero means "events:". No braces: the
	// keys share the hash tag {events}.
	Prefix string
	// Sources are the platform's databases by mode, read by the detector;
	// a mode without one detects nothing (the command line's management
	// commands need none).
	Sources map[invoicing.Mode]Source

	// AllowHTTP accepts http:// endpoint URLs; zero: https only.
	AllowHTTP bool
	// AllowedNetworks are networks deliveries may go to although they are
	// not public (loopback, private...); zero: none. For a receiver on the
	// gateway's own host or network, as the demo has.
	AllowedNetworks []netip.Prefix
	// Secrets keeps the endpoints' signing secrets encrypted in Redis
	// (internal/seal's Keyring, to the operator's key); nil keeps them in
	// plain text. Secrets stored in plain text before keep working, and
	// Reseal seals them.
	Secrets Sealer
	// Lookup resolves an endpoint's host when it is created or changed; nil
	// means the system's resolver. Deliveries always dial through the
	// system's resolver and check the address they connect to.
	Lookup func(ctx context.Context, host string) ([]netip.Addr, error)

	// Timeout is how long a delivery may take, answer included; zero means
	// DefaultTimeout (10 s), and more than MaxTimeout (15 s) is refused.
	Timeout time.Duration
	// Concurrency is how many deliveries an instance makes at once; zero
	// means DefaultConcurrency (64).
	Concurrency int
	// PerEndpoint is how many deliveries to one endpoint may be in flight
	// across every instance; zero means 8. A failing endpoint gets one, so
	// that a dead receiver ties up one delivery slot, not Concurrency.
	PerEndpoint int
	// Schedule is the delay before each retry, the first after the first
	// failed attempt; zero means DefaultSchedule. An event is attempted
	// len(Schedule)+1 times at most.
	Schedule []time.Duration
	// DisableAfter disables an endpoint whose deliveries have all failed for
	// that long; zero means 72 hours.
	DisableAfter time.Duration
	// Retention is how long an event and its deliveries are kept (for
	// retries, the delivery log and replays); zero means DefaultRetention
	// (7 days). Less than
	// the schedule's length, or than Sweep+Settle (the sweep finds a change
	// again for that long), is refused.
	Retention time.Duration
	// Remember is how long an event's id is remembered after it is queued,
	// past its Retention, so that finding its change again (a later,
	// unrelated update of the row still says "paid") does not send it
	// again; about 10 bytes of Redis per event at 100,000 events a day, more
	// per event at fewer (markers.go). Zero means DefaultRemember (90 days), or Retention, or
	// twice Recovery, whichever is longest; less than Retention or than
	// twice Recovery is refused.
	Remember time.Duration
	// FeedWindow is how long the events feed (feed.go) keeps each event,
	// for every company, whether or not it has endpoints; zero means
	// Retention, and less than Retention is refused. Negative turns the feed
	// off: detection then reads only the companies with endpoints.
	FeedWindow time.Duration

	// Tick is how often the detector reads the databases for changes, and
	// idle workers look for due deliveries (those of the instance that
	// queued an event are woken at once); zero means 100 ms.
	Tick time.Duration
	// Margin is how far behind the database's clock the detector reads where
	// the database shows every open transaction and its start (PostgreSQL to
	// a role with pg_monitor) or has one writer (SQLite): the moment between
	// a transaction taking its start time and the database listing it. Zero
	// means 50 ms.
	Margin time.Duration
	// Settle is how far behind the database's clock the detector reads where
	// the database shows a transaction only from its first write (a role
	// without pg_monitor), and how long after its start a transaction may
	// first write and still be read at its commit; later writers are left
	// to the sweep. The sweep reads up to as far behind. Zero means 1 s.
	Settle time.Duration
	// Sweep is how far back the sweep reads again, every Sweep/2, for
	// changes that following the transactions in flight did not catch (a
	// writer that records another time than its transaction's start, a late
	// writer without pg_monitor); zero means 10 minutes.
	Sweep time.Duration
	// Recovery is how far back detection starts when it has no watermark
	// (its first start, or its state in Redis lost); zero means
	// DefaultRecovery (24 hours).
	// Nothing older than an endpoint's creation is sent to it. It is also
	// how long before the point detection has reached an issue or a
	// creation may be and still be reported when detection reaches its row
	// (recentFrom): after an outage, say.
	Recovery time.Duration

	// MinReplicas is how many Redis replicas must acknowledge each endpoint
	// change (creation, change, secret rotation, deletion) before it is
	// reported done (replicas.go); zero means none: a Redis failover may
	// lose the last changes. ReplicaTarget, when not nil, is read at each
	// change instead: the binary's, which follows Redis's topology.
	// ReplicaTimeout bounds each wait; zero means 1s.
	MinReplicas    int
	ReplicaTarget  *durable.Target
	ReplicaTimeout time.Duration

	// Metrics registers the events' Prometheus metrics (docs/observability.md):
	// this instance's counts of detection and deliveries, and the queue's
	// shared state read from Redis at scrape time; nil registers none.
	Metrics prometheus.Registerer
	// TracerProvider makes the spans of detection pages and delivery
	// attempts; nil means otel's global one.
	TracerProvider trace.TracerProvider

	Logger *slog.Logger     // nil means slog.Default()
	Now    func() time.Time // nil means time.Now
}

// DefaultSchedule is the retry schedule: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h,
// 10 h, 24 h, 24 h after each failure (Svix's, extended to about three
// days): a receiver down for a deploy gets its events within seconds, one
// down for a weekend gets them when it is back.
var DefaultSchedule = []time.Duration{5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour,
	5 * time.Hour, 10 * time.Hour, 10 * time.Hour, 24 * time.Hour, 24 * time.Hour}

// MaxTimeout bounds Config.Timeout.
const MaxTimeout = 15 * time.Second

// The defaults of the Config settings a configuration file sets
// (DefaultRemember: markers.go).
const (
	DefaultTimeout     = 10 * time.Second
	DefaultConcurrency = 64
	DefaultRetention   = 7 * 24 * time.Hour
	DefaultRecovery    = 24 * time.Hour
)

// Service detects changes and delivers events, and manages the endpoints
// they go to. It is made of rooms that share one Redis layout, its scripts
// and one clock (base): the endpoints (Webhooks, embedded: their
// management is the Service's), the queue (queue), detection (detector)
// and delivery (dispatcher); the delivery log and the operator's replays
// (deliveries.go, replay.go) are the Service's own.
type Service struct {
	*Webhooks
	q         *queue
	det       *detector
	disp      *dispatcher
	statsKeep time.Duration // how long a reading of the queue's state serves every instance's scrapes
}

// base is what every room shares: Redis and the layout of its keys, the
// clock, the log, the metrics and traces, and the settings the queue's
// scripts take wherever they are run from.
type base struct {
	rdb         redis.UniversalClient
	l           layout
	now         func() time.Time // the clock: Config.Now; what takes time (latencies, spans) is timed by the monotonic clock
	logger      *slog.Logger
	m           *metrics
	tracer      trace.Tracer
	retention   time.Duration
	perEndpoint int
	feedWindow  time.Duration // 0: no feed (feed.go)
}

// throttle says when a repeated failure is logged again: the first time,
// then once a period at most, by the clock it is given.
type throttle struct {
	every time.Duration
	last  time.Time
}

func (t *throttle) due(now time.Time) bool {
	if !t.last.IsZero() && now.Sub(t.last) <= t.every {
		return false
	}
	t.last = now
	return true
}

// New checks cfg and returns a Service.
func New(cfg Config) (*Service, error) {
	st, err := cfg.settings()
	if err != nil {
		return nil, err
	}
	b := &base{rdb: cfg.Redis, l: newLayout(or(cfg.Prefix, "events:")), now: cfg.Now, logger: cfg.Logger,
		m: newMetrics(st.concurrency), tracer: tracing.Tracer(cfg.TracerProvider, tracerName), retention: st.retention, perEndpoint: st.perEndpoint,
		feedWindow: st.feedWindow}
	if b.logger == nil {
		b.logger = slog.Default()
	}
	if b.now == nil {
		b.now = time.Now
	}
	es := &Webhooks{base: b, sealer: cfg.Secrets, recovery: st.recovery, sweep: st.sweep,
		repl: durable.Policy{Replicas: cfg.MinReplicas, Target: cfg.ReplicaTarget, Timeout: cfg.ReplicaTimeout},
		dest: destinations{allowHTTP: cfg.AllowHTTP, allowed: cfg.AllowedNetworks, lookup: cfg.Lookup}}
	if es.sealer == nil {
		es.sealer = plainSealer{}
	}
	q := &queue{base: b, schedule: st.schedule, remember: st.remember, disableAfter: st.disableAfter, timeout: st.timeout, leaseMargin: 20 * time.Second}
	var id [8]byte
	_, _ = rand.Read(id[:])
	queued := make(chan struct{}, 1)
	s := &Service{Webhooks: es, q: q, statsKeep: 10 * time.Second,
		det: &detector{base: b, endpoints: es, queue: q, sources: cfg.Sources, tick: st.tick, margin: st.margin, settle: st.settle, sweep: st.sweep,
			recovery: st.recovery, instance: hex.EncodeToString(id[:]), queued: queued},
		disp: &dispatcher{base: b, endpoints: es, queue: q, dest: es.dest, timeout: st.timeout, concurrency: st.concurrency, tick: st.tick, queued: queued}}
	if cfg.Metrics != nil {
		if err := b.m.register(cfg.Metrics, statsCollector{s}); err != nil {
			return nil, fmt.Errorf("events: registering the metrics: %w", err)
		}
	}
	return s, nil
}

// settings are a Config's durations and sizes, defaults applied.
type settings struct {
	timeout, disableAfter, retention, remember time.Duration
	feedWindow                                 time.Duration
	tick, margin, settle, sweep, recovery      time.Duration
	concurrency, perEndpoint                   int
	schedule                                   []time.Duration
}

// settings checks cfg and applies the defaults.
func (cfg Config) settings() (settings, error) {
	if cfg.Redis == nil {
		return settings{}, errors.New("events: Config.Redis is required")
	}
	if strings.ContainsAny(cfg.Prefix, "{}") {
		return settings{}, errors.New("events: Config.Prefix must not contain braces")
	}
	return cfg.checked()
}

// Check reports what New would refuse of cfg's durations and sizes (all
// but Redis and Prefix), as an *invoicing.SettingError naming the field,
// so that a configuration is checked when it is loaded.
func (cfg Config) Check() error {
	_, err := cfg.checked()
	return err
}

// checked checks cfg's durations and sizes and applies the defaults.
func (cfg Config) checked() (settings, error) {
	bad := func(field, format string, a ...any) (settings, error) {
		return settings{}, invoicing.InvalidSetting("events", field, format, a...)
	}
	if cfg.Timeout > MaxTimeout || cfg.Timeout < 0 {
		return bad("Timeout", "must be at most %s", MaxTimeout)
	}
	for _, f := range []struct {
		name     string
		negative bool
	}{{"Concurrency", cfg.Concurrency < 0}, {"Retention", cfg.Retention < 0}, {"Recovery", cfg.Recovery < 0}, {"Remember", cfg.Remember < 0}} {
		if f.negative {
			return bad(f.name, "must not be negative (zero is its default)")
		}
	}
	st := settings{timeout: orDur(cfg.Timeout, DefaultTimeout), concurrency: orInt(cfg.Concurrency, DefaultConcurrency), perEndpoint: orInt(cfg.PerEndpoint, 8),
		schedule: cfg.Schedule, disableAfter: orDur(cfg.DisableAfter, 72*time.Hour), retention: orDur(cfg.Retention, DefaultRetention),
		tick: orDur(cfg.Tick, 100*time.Millisecond), margin: orDur(cfg.Margin, 50*time.Millisecond), settle: orDur(cfg.Settle, time.Second),
		sweep:    orDur(cfg.Sweep, 10*time.Minute),
		recovery: orDur(cfg.Recovery, DefaultRecovery)}
	if st.schedule == nil {
		st.schedule = DefaultSchedule
	}
	var span time.Duration
	for _, d := range st.schedule {
		if d < 0 {
			return bad("Schedule", "must not hold negative delays")
		}
		span += d
	}
	if st.retention < span {
		return bad("Retention", "must be at least the retry schedule's length (%s), not %s", span, st.retention)
	}
	// An event must be kept while the sweep can find its change again.
	if st.retention < st.sweep+st.settle {
		return bad("Retention", "must be at least Sweep+Settle (%s), not %s", st.sweep+st.settle, st.retention)
	}
	// Detection reports an issue or a creation up to Recovery before its
	// position (detect.go): the ids must be remembered longer than that.
	st.remember = cfg.Remember
	if st.remember == 0 {
		st.remember = max(DefaultRemember, st.retention, 2*st.recovery)
	}
	if st.remember < st.retention || st.remember < 2*st.recovery {
		return bad("Remember", "must be at least Retention (%s) and twice Recovery (%s), not %s", st.retention, 2*st.recovery, st.remember)
	}
	if st.feedWindow = cfg.FeedWindow; st.feedWindow == 0 {
		st.feedWindow = st.retention
	}
	if st.feedWindow > 0 && st.feedWindow < st.retention {
		return bad("FeedWindow", "must be at least Retention (%s), 0 for the same, or negative for no feed; not %s", st.retention, st.feedWindow)
	}
	st.feedWindow = max(st.feedWindow, 0)
	return st, nil
}

// Run detects changes (one instance per mode leads) and delivers events
// until ctx ends; deliveries under way are then finished (within the
// delivery timeout) before it returns.
func (s *Service) Run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Go(func() { s.det.run(ctx) })
	wg.Go(func() { s.disp.run(ctx) })
	wg.Wait()
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func orDur(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

func orInt(n, def int) int {
	if n <= 0 {
		return def
	}
	return n
}

// unavailable wraps a Redis failure as ErrUnavailable, keeping the cause.
func unavailable(err error) error {
	if err == nil || errors.Is(err, ErrUnavailable) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrUnavailable, err)
}
