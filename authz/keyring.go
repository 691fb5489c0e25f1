package authz

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/invoicing-ao/gateway/internal/tracing"
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
	// zero means 1s, and larger values are clamped to 1s, because a
	// revocation must be seen everywhere within one second.
	CacheTTL time.Duration
	// StaleTTL: while Redis fails, keys verified within this long keep
	// working from memory; zero means 5m.
	StaleTTL time.Duration
	// CacheSize bounds the verified-key cache; zero means 100_000.
	CacheSize int
	// NegativeTTL is how long an unknown or revoked digest is remembered as
	// invalid; zero means 1s.
	NegativeTTL time.Duration
	// NegativeSize bounds the invalid-digest cache; zero means 100_000.
	NegativeSize int
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
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Logger; nil means slog.Default(). Secrets are never logged.
	Logger *slog.Logger
	// TracerProvider makes Verify's spans; nil means otel's global one.
	TracerProvider trace.TracerProvider
}

const (
	maxCacheTTL = time.Second
	// mgmtTimeout bounds each management call, and so how long a Create can
	// be half done; orphanGrace must exceed it by far.
	mgmtTimeout = 10 * time.Second
	orphanGrace = time.Minute
)

// Keyring creates, lists, revokes and verifies API keys. It is safe for
// concurrent use. Close stops its background work.
type Keyring struct {
	rdb        redis.UniversalClient
	l          layout
	max        int
	cacheTTL   int64 // nanoseconds, like every duration the hot path compares
	staleTTL   int64
	negTTL     int64
	touchEvery int64
	timeout    time.Duration
	now        func() time.Time
	log        *slog.Logger
	pos        *posCache
	neg        *negCache
	flight     flight
	degraded   atomic.Bool
	retryEvery int64        // nanoseconds
	downUntil  atomic.Int64 // unix nanoseconds; Redis is not asked before

	touches     chan touch
	renewAfter  int64 // nanoseconds: a hit on an older entry queues its renewal
	renewWait   time.Duration
	renewals    chan digest // renew.go
	done        chan struct{}
	wg          sync.WaitGroup
	closeOnce   sync.Once
	pubsubReady chan struct{} // closed once subscribed (or never subscribing)
	tracer      trace.Tracer
	stats       cacheCounters
}

type touch struct {
	d  digest
	at time.Time
}

// New returns a Keyring over cfg.Redis and starts its background goroutines
// (last-used writer, revocation listener).
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
		rdb:         cfg.Redis,
		l:           layout{p: or(cfg.Prefix, "authz:")},
		max:         or(cfg.MaxActiveKeys, 10),
		cacheTTL:    int64(min(or(cfg.CacheTTL, time.Second), maxCacheTTL)),
		staleTTL:    int64(or(cfg.StaleTTL, 5*time.Minute)),
		negTTL:      int64(or(cfg.NegativeTTL, time.Second)),
		touchEvery:  int64(or(cfg.TouchEvery, time.Minute)),
		timeout:     or(cfg.Timeout, 250*time.Millisecond),
		retryEvery:  int64(or(cfg.RetryEvery, time.Second)),
		now:         cfg.Now,
		log:         cfg.Logger,
		pos:         newPosCache(or(cfg.CacheSize, 100_000)),
		neg:         newNegCache(or(cfg.NegativeSize, 100_000)),
		touches:     make(chan touch, 1024),
		renewals:    make(chan digest, maxRenewBatch*8),
		done:        make(chan struct{}),
		pubsubReady: make(chan struct{}),
		tracer:      tracing.Tracer(cfg.TracerProvider, tracerName),
	}
	if k.now == nil {
		k.now = time.Now
	}
	if k.log == nil {
		k.log = slog.Default()
	}
	k.renewAfter, k.renewWait = k.cacheTTL/2, max(time.Millisecond, time.Duration(k.cacheTTL)/20)
	k.wg.Add(2)
	go k.touchLoop()
	go k.renewLoop()
	if cfg.NoPubSub {
		close(k.pubsubReady)
	} else {
		k.wg.Add(1)
		go k.listen()
	}
	return k
}

func or[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// Close stops the background goroutines, flushing nothing more: last-used
// times are best effort. It is safe to call more than once.
func (k *Keyring) Close() error {
	k.closeOnce.Do(func() { close(k.done) })
	k.wg.Wait()
	return nil
}

// Ping reports whether Redis answers.
func (k *Keyring) Ping(ctx context.Context) error {
	if err := k.rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return nil
}

// Verify returns the active key whose secret this is. Malformed, unknown and
// revoked secrets are ErrInvalidKey, keys past their expiry ErrExpiredKey
// (on every instance from the moment of expiry: cached copies compare it
// with the clock on every use); ErrUnavailable means the key could not
// be checked (Redis fails and no copy verified within StaleTTL is cached).
//
// A cached key younger than CacheTTL is answered from memory without
// allocating; otherwise one HGETALL asks Redis, shared by concurrent callers
// of the same key. Unknown digests are remembered for NegativeTTL. A key
// created a moment ago works at once on every instance: its digest comes
// from 256 fresh random bits, so no negative cache can have seen it.
func (k *Keyring) Verify(ctx context.Context, secret string) (Key, error) {
	if trace.SpanFromContext(ctx).IsRecording() {
		return k.verifyTraced(ctx, secret)
	}
	key, _, err := k.verify(ctx, secret)
	return key, err
}

// verify is Verify, also telling how the cache answered (for spans and
// Stats).
func (k *Keyring) verify(ctx context.Context, secret string) (Key, cacheOutcome, error) {
	mode, ok := secretMode(secret)
	if !ok {
		return Key{}, cacheSkipped, ErrInvalidKey
	}
	// A fixed-size copy on the stack: []byte(secret) would allocate.
	var buf [SecretLength]byte
	copy(buf[:], secret)
	d := sha256.Sum256(buf[:])
	now := k.now().UnixNano()
	if e := k.pos.get(&d); e != nil {
		if age := now - e.verified; age < k.cacheTTL {
			k.pos.hit(&d)
			if e.expired(now) {
				return Key{}, cacheHit, ErrExpiredKey
			}
			k.touch(e, &d, now)
			if age >= k.renewAfter {
				k.renewSoon(e, &d)
			}
			return e.key, cacheHit, nil
		}
	} else if k.neg.has(&d, now) {
		k.stats.negative.Add(1)
		return Key{}, cacheNegative, ErrInvalidKey
	}
	// Callers sharing another's fetch count as misses, even when that fetch
	// was answered from the stale copy: only its leader knows.
	outcome := cacheMiss
	key, err := k.flight.do(ctx, &d, func() (Key, error) {
		key, stale, err := k.fetch(ctx, &d, mode, now)
		if stale {
			outcome = cacheStale
		}
		return key, err
	})
	k.stats.count(outcome)
	if err != nil {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return Key{}, outcome, fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		return Key{}, outcome, err
	}
	return key, outcome, nil
}

// errRedisDown stands for the last Redis failure while Verify skips Redis.
var errRedisDown = errors.New("redis failed a moment ago; not asked again yet")

// fetch asks Redis for the digest's record and updates the caches. stale is
// true when Redis failed and the copy in memory answered.
func (k *Keyring) fetch(ctx context.Context, d *digest, mode invoicing.Mode, now int64) (key Key, stale bool, err error) {
	// The caller's cancellation must not fail the other callers sharing
	// this fetch; the timeout bounds it instead.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), k.timeout)
	defer cancel()
	fromMemory := func(err error) (Key, bool, error) {
		if e := k.pos.get(d); e != nil && now-e.verified <= k.staleTTL {
			if e.expired(now) {
				return Key{}, true, ErrExpiredKey
			}
			k.touch(e, d, now)
			return e.key, true, nil
		}
		return Key{}, false, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	// While Redis is known to be down, one caller per retryEvery probes it;
	// the others answer at once instead of each waiting out the timeout.
	if until := k.downUntil.Load(); until != 0 && (now < until || !k.downUntil.CompareAndSwap(until, now+k.retryEvery)) {
		return fromMemory(errRedisDown)
	}
	m, err := k.rdb.HGetAll(ctx, k.l.recordOf(d)).Result()
	if err != nil {
		k.downUntil.Store(now + k.retryEvery)
		if k.degraded.CompareAndSwap(false, true) {
			k.log.Warn("authz: Redis unavailable; serving recently verified keys from memory", "err", err)
		}
		return fromMemory(err)
	}
	k.downUntil.Store(0)
	if k.degraded.CompareAndSwap(true, false) {
		k.log.Info("authz: Redis reachable again")
	}
	e, err := k.settle(d, mode, m, now)
	if err != nil {
		return Key{}, false, err
	}
	k.touch(e, d, now)
	return e.key, false, nil
}

// settle applies a key record read from Redis (m, asked at now) to the
// caches: an active key of the mode is (re)cached, anything else forgotten
// and remembered as invalid for NegativeTTL. It returns the new entry, or
// ErrInvalidKey, or ErrExpiredKey with the entry.
func (k *Keyring) settle(d *digest, mode invoicing.Mode, m map[string]string, now int64) (*entry, error) {
	key, found, err := decodeRecord(m)
	if err != nil {
		k.log.Error("authz: unreadable key record", "err", err)
	}
	if err != nil || !found || key.State != StateActive || key.Mode != mode {
		k.pos.drop(d)
		k.neg.add(d, now+k.negTTL, now)
		return nil, ErrInvalidKey
	}
	// An expired key is remembered as what it is, not as invalid: its
	// owner is told it expired, from memory, until CacheTTL has passed.
	e := &entry{key: key, verified: now}
	if key.ExpiresAt != nil {
		e.expires = max(key.ExpiresAt.UnixNano(), 1)
	}
	k.pos.put(d, e)
	if e.expired(now) {
		return e, ErrExpiredKey
	}
	return e, nil
}

// listen drops revoked keys from the cache as soon as another instance
// announces them, instead of after CacheTTL.
func (k *Keyring) listen() {
	defer k.wg.Done()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ps := k.rdb.Subscribe(ctx, k.l.channel())
	ready := false
	k.wg.Add(1)
	go func() {
		defer k.wg.Done()
		<-k.done
		cancel()
		_ = ps.Close() // a blocked Receive ignores ctx; closing unblocks it
	}()
	for {
		msg, err := ps.Receive(ctx)
		if err != nil {
			select {
			case <-k.done:
				if !ready {
					close(k.pubsubReady)
				}
				return
			default:
			}
			// go-redis reconnects on the next Receive; do not spin.
			select {
			case <-k.done:
			case <-time.After(time.Second):
			}
			continue
		}
		switch m := msg.(type) {
		case *redis.Subscription:
			if !ready {
				ready = true
				close(k.pubsubReady)
			}
		case *redis.Message:
			var d digest
			if b, err := hex.DecodeString(m.Payload); err == nil && len(b) == len(d) {
				copy(d[:], b)
				k.pos.drop(&d)
			}
		}
	}
}

// mgmt bounds a management call in time.
func mgmt(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, mgmtTimeout)
}

func unavailable(op string, err error) error {
	return fmt.Errorf("%w: %s: %w", ErrUnavailable, op, err)
}
