package authz

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/invoicing-ao/gateway/internal/durable"
	"github.com/invoicing-ao/gateway/invoicing"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/trace"
)

// Config configures a Keyring. Every zero value has a working default.
type Config struct {
	// Redis is required (single node, sentinel or cluster).
	Redis redis.UniversalClient
	// Prefix starts every Redis key; zero means "authz:". It must not hold
	// '{' or '}', which would change the hash slots.
	Prefix string
	// MaxActiveKeys per company; zero means 10.
	MaxActiveKeys int
	// CacheTTL is how long a verified key is trusted without asking Redis;
	// zero means DefaultCacheTTL (1s), and larger values are clamped to
	// it, because a revocation must be seen everywhere within one second.
	CacheTTL time.Duration
	// StaleTTL: while Redis fails, keys verified within this long keep
	// working from memory; zero means DefaultStaleTTL (5m).
	StaleTTL time.Duration
	// CacheSize bounds the verified-key cache; zero means 100_000.
	CacheSize int
	// NegativeTTL is how long an unknown or revoked digest is remembered as
	// invalid; zero means 1s.
	NegativeTTL time.Duration
	// NegativeSize bounds the invalid-digest cache; zero means 100_000.
	NegativeSize int
	// SourceLookups bounds, per source address (the /64 of an IPv6 one),
	// the lookups of keys this instance does not know that find nothing
	// (lookups.go); beyond it such keys are refused with
	// ErrKeyLookupsLimited and no lookup. A zero Rate means 2/s, a zero
	// Burst 20; a negative Rate, no bound per source.
	SourceLookups LookupLimit
	// InstanceLookups bounds the same lookups from all sources together; a
	// zero Rate means 100/s, a zero Burst 200; a negative Rate, no bound.
	InstanceLookups LookupLimit
	// MaxSources bounds the sources whose lookups are tracked; zero means
	// 10_000. Beyond it an idle one is forgotten, else any.
	MaxSources int
	// RefuseLegacyForm refuses secrets of the first form (no checksum)
	// without a lookup, as invalid. Zero accepts them: their keys work,
	// looked up under the bound like any key this instance does not know.
	RefuseLegacyForm bool
	// Timeout bounds each Redis call of Verify; zero means 250ms. Verify
	// fails over to the stale cache or ErrUnavailable instead of waiting.
	Timeout time.Duration
	// RetryEvery: after a Redis failure, Verify answers from memory (or
	// ErrUnavailable) without asking Redis, and one call per RetryEvery
	// probes it again; zero means 1s. Without it every request would wait
	// out Timeout while Redis is down.
	RetryEvery time.Duration
	// TouchEvery throttles last-used writes per key and instance; zero
	// means 1m.
	TouchEvery time.Duration
	// NoPubSub turns off instant cache invalidation over Redis pub/sub; the
	// CacheTTL bound on revocation holds either way.
	NoPubSub bool
	// MinReplicas is how many Redis replicas must acknowledge each write of
	// a creation, a roll or a revocation before it is reported done (see
	// ErrNotReplicated); zero means none: a Redis failover may lose the last
	// changes, and a revoked key come back.
	MinReplicas int
	// ReplicaTarget, when not nil, is read at each change instead of
	// MinReplicas: the binary's, which follows Redis's topology
	// (redisMinReplicas auto) and may rise while it runs.
	ReplicaTarget *durable.Target
	// ReplicaTimeout bounds each wait for those acknowledgements; zero
	// means 1s.
	ReplicaTimeout time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Logger; nil means slog.Default(). Secrets are never logged.
	Logger *slog.Logger
	// TracerProvider makes Verify's spans; nil means otel's global one.
	TracerProvider trace.TracerProvider
}

// The defaults of Config's verification cache.
const (
	// DefaultCacheTTL is CacheTTL's default, and its most: a revocation
	// must be seen everywhere within a second.
	DefaultCacheTTL = time.Second
	// DefaultStaleTTL is StaleTTL's default.
	DefaultStaleTTL = 5 * time.Minute
)

// Check refuses the cache's durations New would not honour, each as an
// *invoicing.SettingError naming the Config field: a negative one (zero is
// the default), and a CacheTTL over DefaultCacheTTL, which New clamps and
// a configuration is told of. A configuration is checked with it when it
// is loaded.
func (c Config) Check() error {
	var errs []error
	if c.CacheTTL < 0 || c.CacheTTL > DefaultCacheTTL {
		errs = append(errs, invoicing.InvalidSetting("authz", "CacheTTL", "must be between 0 (%s) and %s: revocations must be seen within a second", DefaultCacheTTL, DefaultCacheTTL))
	}
	if c.StaleTTL < 0 {
		errs = append(errs, invoicing.InvalidSetting("authz", "StaleTTL", "must not be negative (zero means %s)", DefaultStaleTTL))
	}
	return errors.Join(errs...)
}

const (
	maxCacheTTL = DefaultCacheTTL
	// mgmtTimeout bounds each management call, and so how long a Create can
	// be half done; orphanGrace must exceed it by far.
	mgmtTimeout = 10 * time.Second
	orphanGrace = time.Minute
)

// Keyring creates, lists, rolls, revokes and verifies API keys. It is safe
// for concurrent use. Close stops its background work.
//
// The Keyring itself keeps keys in Redis: their records and counts, and
// the changes made to them (manage.go, roll.go, reclaim.go, state.go). Its
// verifier answers Verify from memory and keeps that memory true
// (verifier.go). A change tells the verifier only what it must forget;
// every other instance hears of it through pub/sub. So a creation or a
// roll touches the few fields below, and the request path the verifier's.
type Keyring struct {
	rdb  redis.UniversalClient
	repl durable.Policy // the management writes' acknowledgements
	l    layout
	max  int
	now  func() time.Time
	log  *slog.Logger
	v    *verifier
}

// New returns a Keyring over cfg.Redis and starts its background goroutines
// (last-used writer, renewals, revocation listener).
func New(cfg Config) *Keyring {
	if cfg.Redis == nil {
		panic("authz: Config.Redis is required")
	}
	if strings.ContainsAny(cfg.Prefix, "{}") {
		// A brace would make the prefix the hash tag and put every company
		// in one Cluster slot, or split the limit script's keys.
		panic("authz: Config.Prefix must not contain braces")
	}
	k := &Keyring{
		rdb:  cfg.Redis,
		repl: durable.Policy{Replicas: cfg.MinReplicas, Target: cfg.ReplicaTarget, Timeout: cfg.ReplicaTimeout},
		l:    layout{p: cmp.Or(cfg.Prefix, "authz:")},
		max:  cmp.Or(cfg.MaxActiveKeys, 10),
		now:  cfg.Now,
		log:  cfg.Logger,
	}
	if k.now == nil {
		k.now = time.Now
	}
	if k.log == nil {
		k.log = slog.Default()
	}
	k.v = newVerifier(cfg, k.rdb, k.l, k.now, k.log)
	return k
}

// orLimit is l with def's rate or burst where l's is zero.
func orLimit(l, def LookupLimit) LookupLimit {
	return LookupLimit{Rate: cmp.Or(l.Rate, def.Rate), Burst: cmp.Or(l.Burst, def.Burst)}
}

// Close stops the background goroutines, flushing nothing more: last-used
// times are best effort. It is safe to call more than once.
func (k *Keyring) Close() error {
	k.v.close()
	return nil
}

// Ping reports whether Redis answers.
func (k *Keyring) Ping(ctx context.Context) error {
	if err := k.rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return nil
}

// mgmt bounds a management call in time.
func mgmt(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, mgmtTimeout)
}

func unavailable(op string, err error) error {
	return fmt.Errorf("%w: %s: %w", ErrUnavailable, op, err)
}
