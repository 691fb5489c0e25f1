package authz

import (
	"cmp"
	"context"
	"encoding/hex"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/trace"

	"github.com/invoicing-ao/gateway/internal/tracing"
)

// verifier answers Verify: from memory while a key's copy is younger than
// CacheTTL (verify.go), reading Redis once for concurrent callers
// otherwise, remembering unknown digests, bounding the lookups of keys it
// does not know (lookups.go), renewing keys in use ahead of their TTL
// (renew.go), noting their use (touch.go), serving recent copies while
// Redis is down, and dropping the copies other instances announce revoked
// (listen). It reads Redis (the records, by the Keyring's layout) and
// never writes a key but its last use.
type verifier struct {
	rdb redis.UniversalClient
	l   layout
	now func() time.Time
	log *slog.Logger

	cacheTTL int64 // nanoseconds, like every duration the hot path compares
	staleTTL int64
	negTTL   int64
	timeout  time.Duration
	pos      *posCache
	neg      *negCache
	flight   flight
	limit    *lookupLimit // the bound of lookups of unknown keys
	noLegacy bool         // RefuseLegacyForm
	tracer   trace.Tracer
	stats    cacheCounters

	// While Redis fails: answered from memory, one call per retryEvery
	// asking again.
	degraded   atomic.Bool
	retryEvery int64        // nanoseconds
	downUntil  atomic.Int64 // unix nanoseconds; Redis is not asked before

	touchEvery int64 // nanoseconds (touch.go)
	touches    chan touch
	renewAfter int64 // nanoseconds: a hit on an older entry queues its renewal
	renewWait  time.Duration
	renewals   chan digest // renew.go

	done        chan struct{}
	wg          sync.WaitGroup
	closeOnce   sync.Once
	pubsubReady chan struct{} // closed once subscribed (or never subscribing)
}

type touch struct {
	d  digest
	at time.Time
}

// newVerifier is cfg's verifier, over the Keyring's Redis and layout, its
// background goroutines started (last-used writer, renewals, revocation
// listener).
func newVerifier(cfg Config, rdb redis.UniversalClient, l layout, now func() time.Time, log *slog.Logger) *verifier {
	k := &verifier{
		rdb:        rdb,
		l:          l,
		now:        now,
		log:        log,
		cacheTTL:   int64(min(cmp.Or(cfg.CacheTTL, DefaultCacheTTL), maxCacheTTL)),
		staleTTL:   int64(cmp.Or(cfg.StaleTTL, DefaultStaleTTL)),
		negTTL:     int64(cmp.Or(cfg.NegativeTTL, time.Second)),
		touchEvery: int64(cmp.Or(cfg.TouchEvery, time.Minute)),
		timeout:    cmp.Or(cfg.Timeout, 250*time.Millisecond),
		retryEvery: int64(cmp.Or(cfg.RetryEvery, time.Second)),
		pos:        newPosCache(cmp.Or(cfg.CacheSize, 100_000)),
		neg:        newNegCache(cmp.Or(cfg.NegativeSize, 100_000)),
		limit: newLookupLimit(orLimit(cfg.SourceLookups, LookupLimit{Rate: 2, Burst: 20}),
			orLimit(cfg.InstanceLookups, LookupLimit{Rate: 100, Burst: 200}), cmp.Or(cfg.MaxSources, 10_000)),
		noLegacy:    cfg.RefuseLegacyForm,
		touches:     make(chan touch, 1024),
		renewals:    make(chan digest, maxRenewBatch*8),
		done:        make(chan struct{}),
		pubsubReady: make(chan struct{}),
		tracer:      tracing.Tracer(cfg.TracerProvider, tracerName),
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

// close stops the background goroutines. It is safe to call more than
// once.
func (k *verifier) close() {
	k.closeOnce.Do(func() { close(k.done) })
	k.wg.Wait()
}

// forget drops this instance's copy of a key whose record changed (a
// roll); the next use reads it again.
func (k *verifier) forget(d *digest) { k.pos.drop(d) }

// revoked drops this instance's copy of a revoked key and remembers its
// digest as invalid for NegativeTTL, so that it is refused here at once.
func (k *verifier) revoked(d *digest) {
	k.pos.drop(d)
	now := k.now().UnixNano()
	k.neg.add(d, now+k.negTTL, now)
}

// stored forgets that a new key's digest was remembered as invalid (only
// if someone guessed 256 random bits).
func (k *verifier) stored(d *digest) { k.neg.drop(d) }

// listen drops revoked keys from the cache as soon as another instance
// announces them, instead of after CacheTTL.
func (k *verifier) listen() {
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
