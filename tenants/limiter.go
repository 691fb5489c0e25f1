package tenants

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/invoicing-ao/gateway/internal/durable"
	"github.com/invoicing-ao/gateway/internal/tracing"
	"github.com/invoicing-ao/gateway/invoicing"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/trace"
)

// ErrInvalidCompany is returned for an empty company ID, which would make the
// keys of different companies collide.
var ErrInvalidCompany = errors.New("tenants: empty company ID")

// Config configures a Limiter.
type Config struct {
	// Redis holds the TATs and the overrides; required. Give it
	// ContextTimeoutEnabled: without it go-redis ignores context deadlines and
	// a hung (not refusing) Redis holds each probe for the client's
	// ReadTimeout instead of RedisTimeout.
	Redis        redis.UniversalClient
	Prefix       string        // key prefix; zero means "tenants:"; must not contain '{'
	LiveDefault  Limit         // a zero Rate means 50, a zero Burst 100 (DefaultLive)
	TestDefault  Limit         // a zero Rate means 10, a zero Burst 20 (DefaultTest)
	RedisTimeout time.Duration // per-refresh Redis deadline; zero means 50ms
	RetryEvery   time.Duration // while in fallback, how often one request probes Redis again; zero means 1s
	// LeaseTTL is how long leased tokens may be spent after their refresh
	// (lease.go), hence how long a limit changed in Redis may go unseen by an
	// instance; zero means 500ms, at most MaxLeaseTTL. A longer lease costs
	// fewer refreshes (an active company's lease is refreshed at least once
	// per TTL) and leaves RateLimit's remaining staler.
	LeaseTTL time.Duration
	Now      func() time.Time // nil means time.Now (leases, the local fallback; tests set it)
	Logger   *slog.Logger     // nil means slog.Default()
	// TracerProvider makes Allow's spans; nil means otel's global one.
	TracerProvider trace.TracerProvider
	// MinReplicas is how many Redis replicas must acknowledge a limit
	// change (SetLimit, ResetLimits) before it is reported done (see
	// ErrNotReplicated); zero means none: a Redis failover may lose the
	// last changes.
	MinReplicas int
	// ReplicaTarget, when not nil, is read at each change instead of
	// MinReplicas: the binary's, which follows Redis's topology
	// (redisMinReplicas auto) and may rise while it runs.
	ReplicaTarget *durable.Target
	// ReplicaTimeout bounds each wait for those acknowledgements; zero
	// means 1s.
	ReplicaTimeout time.Duration
	// CountOffered counts every request decided, admitted or refused, per
	// company, mode and second, for TakeOffered (offered.go); false counts
	// nothing.
	CountOffered bool
}

// The default limits of a company without an override, where Config sets
// none: LiveDefault's and TestDefault's zero rate or burst.
var (
	DefaultLive = Limit{Rate: 50, Burst: 100}
	DefaultTest = Limit{Rate: 10, Burst: 20}
)

// Defaults are the default limits c gives, LIVE and TEST: its own, each
// zero rate or burst replaced by DefaultLive's or DefaultTest's. Each is
// to pass Limit.Validate, as New requires.
func (c Config) Defaults() (live, test Limit) {
	return orLimit(c.LiveDefault, DefaultLive), orLimit(c.TestDefault, DefaultTest)
}

// orLimit is l, its zero rate or burst replaced by def's.
func orLimit(l, def Limit) Limit {
	if l.Rate == 0 {
		l.Rate = def.Rate
	}
	if l.Burst == 0 {
		l.Burst = def.Burst
	}
	return l
}

func (c Config) withDefaults() Config {
	if c.Prefix == "" {
		c.Prefix = "tenants:"
	}
	c.LiveDefault, c.TestDefault = c.Defaults()
	if c.RedisTimeout == 0 {
		c.RedisTimeout = 50 * time.Millisecond
	}
	if c.RetryEvery == 0 {
		c.RetryEvery = time.Second
	}
	if c.LeaseTTL == 0 {
		c.LeaseTTL = 500 * time.Millisecond
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Validate reports what New would refuse, so that a configuration file can be
// checked when it is loaded.
func (c Config) Validate() error {
	if c.Redis == nil {
		return errors.New("tenants: Config.Redis is required")
	}
	c = c.withDefaults()
	for _, p := range c.Prefix {
		if p == '{' || p == '}' {
			return fmt.Errorf("tenants: prefix %q must not contain braces: they would change the keys' Redis Cluster slot", c.Prefix)
		}
	}
	if err := c.LiveDefault.Validate(); err != nil {
		return fmt.Errorf("tenants: LIVE default: %w", err)
	}
	if err := c.TestDefault.Validate(); err != nil {
		return fmt.Errorf("tenants: TEST default: %w", err)
	}
	if c.RedisTimeout < 0 || c.RetryEvery < 0 || c.ReplicaTimeout < 0 {
		return errors.New("tenants: RedisTimeout, RetryEvery and ReplicaTimeout must not be negative")
	}
	if c.MinReplicas < 0 {
		return errors.New("tenants: MinReplicas must not be negative")
	}
	if c.LeaseTTL < 0 || c.LeaseTTL > MaxLeaseTTL {
		return fmt.Errorf("tenants: LeaseTTL %v is outside [0, %v]: a limit change must reach every instance within a second", c.LeaseTTL, MaxLeaseTTL)
	}
	return nil
}

// MaxLeaseTTL bounds Config.LeaseTTL: a lease plus the refresh that replaces
// it (RedisTimeout) must stay within the second in which a limit change
// reaches every instance.
const MaxLeaseTTL = 900 * time.Millisecond

// Limiter decides whether a company's request is admitted. All instances
// sharing one Redis together admit what one would, within the bounds of
// leasing (lease.go): exact for limits that are not leased, within 0.1 s of
// the rate for those that are. While Redis is unreachable
// each instance decides alone at the company's last known limit, so N
// instances in fallback together admit up to N times the limit: bounded, and
// preferred to refusing everyone or admitting everything.
type Limiter struct {
	rdb       redis.UniversalClient
	repl      durable.Policy // the limit changes' acknowledgements
	prefix    string
	defaults  [2]Limit
	defaults4 []any // the script's first ARGV: the default limits; read-only
	// oneCompanyPerCall: the client spreads keys over nodes by hash tag
	// (Redis Cluster, Ring), so one script call may touch one company only.
	oneCompanyPerCall bool
	id                string // this instance, as the script counts instances
	timeout           time.Duration
	retryEvery        time.Duration
	leaseTTL          time.Duration
	now               func() time.Time
	lastMS            atomic.Int64 // the last change's time (overrides.go)
	log               *slog.Logger

	tracer    trace.Tracer
	fallback  atomic.Bool
	nextProbe atomic.Int64 // unix ns after which one request may try Redis again
	batch     batcher      // concurrent refreshes share round trips (batch.go)
	stats     counters

	countsOffered bool
	offered       offeredList // the states with requests counted (offered.go)

	*states
}

// New returns a Limiter. It panics on a Config that Validate refuses: that is
// a programming or deployment error, to be caught by Validate at load time.
func New(cfg Config) *Limiter {
	if err := cfg.Validate(); err != nil {
		panic(err)
	}
	cfg = cfg.withDefaults()
	l := &Limiter{
		rdb:        cfg.Redis,
		repl:       durable.Policy{Replicas: cfg.MinReplicas, Target: cfg.ReplicaTarget, Timeout: cfg.ReplicaTimeout},
		prefix:     cfg.Prefix,
		defaults:   [2]Limit{cfg.LiveDefault, cfg.TestDefault}, // by Mode.Index
		id:         instanceID(),
		timeout:    cfg.RedisTimeout,
		retryEvery: cfg.RetryEvery,
		leaseTTL:   cfg.LeaseTTL,
		now:        cfg.Now,
		log:        cfg.Logger,
		states:     newStates(),
		tracer:     tracing.Tracer(cfg.TracerProvider, tracerName),

		countsOffered: cfg.CountOffered,
	}
	for _, d := range l.defaults {
		l.defaults4 = append(l.defaults4, strconv.FormatFloat(d.Rate, 'g', -1, 64), strconv.Itoa(d.Burst))
	}
	_, single := cfg.Redis.(*redis.Client) // one server, or Sentinel's current master
	l.oneCompanyPerCall = !single
	if !contextTimeoutEnabled(cfg.Redis) {
		l.log.Warn("tenants: the Redis client ignores context deadlines (ContextTimeoutEnabled is off); a hung Redis delays decisions by the client's ReadTimeout, not RedisTimeout")
	}
	return l
}

func contextTimeoutEnabled(c redis.UniversalClient) bool {
	switch c := c.(type) {
	case *redis.Client:
		return c.Options().ContextTimeoutEnabled
	case *redis.ClusterClient:
		return c.Options().ContextTimeoutEnabled
	case *redis.Ring:
		return c.Options().ContextTimeoutEnabled
	}
	return true // unknown kind: nothing to say
}

// Allow decides whether one request of the company in the mode is admitted, and takes it from the budget if so. A Redis failure is
// not an error: the decision is then made locally (Decision.Local). An error
// means invalid arguments, or that ctx ended: the caller gave up, which says
// nothing about Redis.
func (l *Limiter) Allow(ctx context.Context, companyID string, m invoicing.Mode) (Decision, error) {
	if trace.SpanFromContext(ctx).IsRecording() {
		return l.allowTraced(ctx, companyID, m)
	}
	return l.allow(ctx, companyID, m)
}

func (l *Limiter) allow(ctx context.Context, companyID string, m invoicing.Mode) (Decision, error) {
	if !m.Valid() {
		return Decision{}, fmt.Errorf("tenants: %w: %q", invoicing.ErrInvalidMode, m)
	}
	if companyID == "" {
		return Decision{}, ErrInvalidCompany
	}
	now := l.now()
	st := l.state(companyID, m, now)
	if l.fallback.Load() && !l.probeDue(now) {
		d := l.decideLocal(st, now, m)
		if l.countsOffered {
			st.mu.Lock()
			l.countOffered(st, now, !d.Allowed)
			st.mu.Unlock()
		}
		return d, nil
	}
	st.mu.Lock()
	if d, ok := st.lease.takeLeased(now.UnixNano()); ok {
		if l.countsOffered {
			l.countOffered(st, now, !d.Allowed)
		}
		st.mu.Unlock()
		l.stats.leased(d.Allowed)
		return d, nil
	}
	if err := ctx.Err(); err != nil { // the caller left: no reason to ask Redis
		st.mu.Unlock()
		return Decision{}, fmt.Errorf("tenants: rate limit decision: %w", context.Cause(ctx))
	}
	if l.countsOffered { // decided by the refresh, or else alone: a refusal is counted then
		l.countOffered(st, now, false)
	}
	w, schedule := st.lease.join()
	st.mu.Unlock()
	if schedule {
		l.schedule(st)
	}
	d, err := l.await(ctx, st, w)
	if err != nil {
		if ctx.Err() != nil {
			return Decision{}, fmt.Errorf("tenants: rate limit decision: %w", context.Cause(ctx))
		}
		l.enterFallback(now, err)
		d = l.decideLocal(st, now, m)
		l.afterDecision(st, now, d)
		return d, nil
	}
	l.leaveFallback()
	l.afterDecision(st, now, d)
	return d, nil
}

// await waits for w's refresh, within ctx and the Redis timeout.
func (l *Limiter) await(ctx context.Context, st *state, w *waiter) (Decision, error) {
	select {
	case <-w.done: // the usual case: this request sent the refresh itself
		return w.d, w.err
	default:
	}
	ctx, cancel := context.WithTimeout(ctx, l.timeout)
	defer cancel()
	select {
	case <-w.done:
		return w.d, w.err
	case <-ctx.Done():
	}
	st.mu.Lock()
	served := st.lease.leave(w)
	st.mu.Unlock()
	if served {
		return w.d, w.err
	}
	return Decision{}, ctx.Err()
}

func (l *Limiter) decideLocal(st *state, now time.Time, m invoicing.Mode) Decision {
	l.stats.fallback.Add(1)
	return st.decideLocal(now, l.known(st, m))
}

// known is the limit the fallback applies: the last one Redis applied to the
// company and mode, else the default.
func (l *Limiter) known(st *state, m invoicing.Mode) Limit {
	if lim := st.limit.Load(); lim != nil {
		return *lim
	}
	return l.defaults[m.Index()]
}

// probeDue lets one request, at most every RetryEvery, try Redis while in
// fallback, so a dead Redis does not add its timeout to every request.
func (l *Limiter) probeDue(now time.Time) bool {
	next := l.nextProbe.Load()
	if now.UnixNano() < next {
		return false
	}
	return l.nextProbe.CompareAndSwap(next, now.Add(l.retryEvery).UnixNano())
}

func (l *Limiter) enterFallback(now time.Time, err error) {
	l.nextProbe.Store(now.Add(l.retryEvery).UnixNano())
	if l.fallback.CompareAndSwap(false, true) {
		l.log.Warn("tenants: Redis unreachable; deciding rate limits locally per instance", "error", err, "retry_every", l.retryEvery)
	}
}

func (l *Limiter) leaveFallback() {
	if l.fallback.Load() && l.fallback.CompareAndSwap(true, false) {
		l.log.Info("tenants: Redis reachable again; rate limits are global again")
	}
}

// Fallback reports whether the instance currently decides locally.
func (l *Limiter) Fallback() bool { return l.fallback.Load() }
