// Package sharedkey keeps a random key that every instance of a deployment
// shares, in Redis, with nothing for the operator to set: the first
// instance that needs it makes it (SET NX), every other reads it, and an
// instance that knows it puts it back, within Refresh, should Redis lose
// it. It keys what must be unforgeable and the same on every instance: the
// API's cursors, when no cursor secret is configured.
//
// A key built into the source would do neither: anyone who reads the
// source could forge with it. A key of each process would be unforgeable
// but refused by every other instance, and by the same one after a
// restart.
package sharedkey

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Size is a key's length in bytes (256 random bits).
const Size = 32

// Config says where the key is kept.
type Config struct {
	Redis redis.UniversalClient // required
	Name  string                // the Redis key that holds it (hex); required
	// Refresh is how often a known key is compared with Redis's (and put
	// back if Redis lost it); zero means a minute.
	Refresh time.Duration
	// Retry is how long after a failed first read Keys answers the same
	// error without asking Redis again, so that an outage costs each
	// request nothing; zero means a second.
	Retry time.Duration
	Now   func() time.Time // nil means time.Now
}

// Key is a deployment's shared key, read from Redis once and then
// compared with it every Refresh. Safe for concurrent use.
type Key struct {
	cfg Config

	mu       sync.Mutex
	keys     [][]byte  // the key in force, then the one before it, if any
	checked  time.Time // when keys were last compared with Redis's
	failedAt time.Time // the last failed first read, and its error
	failed   error

	refreshing atomic.Bool
}

// New returns the key cfg names; nothing is read until Keys is called.
func New(cfg Config) *Key {
	if cfg.Refresh <= 0 {
		cfg.Refresh = time.Minute
	}
	if cfg.Retry <= 0 {
		cfg.Retry = time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Key{cfg: cfg}
}

// ErrUnavailable is a key that was never read: Redis did not answer.
var ErrUnavailable = errors.New("sharedkey: the deployment's key cannot be read from Redis")

// Keys returns the key in force first, then the one before it when Redis's
// changed while this process ran (Redis lost it and another instance made
// a new one before this one put it back): what either made is still
// taken. Once a key is known it is returned at once; the comparison with
// Redis runs in the background.
func (k *Key) Keys(ctx context.Context) ([][]byte, error) {
	k.mu.Lock()
	if k.keys != nil {
		keys, stale := k.keys, k.cfg.Now().Sub(k.checked) >= k.cfg.Refresh
		k.mu.Unlock()
		if stale && k.refreshing.CompareAndSwap(false, true) {
			go k.refresh()
		}
		return keys, nil
	}
	defer k.mu.Unlock()
	if k.failed != nil && k.cfg.Now().Sub(k.failedAt) < k.cfg.Retry {
		return nil, k.failed
	}
	fresh := make([]byte, Size)
	_, _ = rand.Read(fresh) // never fails (crypto/rand)
	got, err := k.exchange(ctx, fresh)
	if err != nil {
		k.failed, k.failedAt = fmt.Errorf("%w: %w", ErrUnavailable, err), k.cfg.Now()
		return nil, k.failed
	}
	k.keys, k.checked, k.failed = [][]byte{got}, k.cfg.Now(), nil
	return k.keys, nil
}

// refresh compares the key in force with Redis's, putting it back when
// Redis has none, adopting Redis's when it differs.
func (k *Key) refresh() {
	defer k.refreshing.Store(false)
	k.mu.Lock()
	cur := k.keys[0]
	k.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	got, err := k.exchange(ctx, cur)
	k.mu.Lock()
	defer k.mu.Unlock()
	if err != nil {
		return // kept as it is; compared again at the next Keys
	}
	k.checked = k.cfg.Now()
	if string(got) != string(k.keys[0]) {
		k.keys = [][]byte{got, k.keys[0]}
	}
}

// exchangeScript sets KEYS[1] to ARGV[1] unless it holds a key, and
// returns what it holds: one step, so that of two instances making the
// key at once, both end with the same.
var exchangeScript = redis.NewScript(`
redis.call('SET', KEYS[1], ARGV[1], 'NX')
return redis.call('GET', KEYS[1])`)

// exchange puts candidate in Redis unless a key is there, and returns the
// key Redis holds.
func (k *Key) exchange(ctx context.Context, candidate []byte) ([]byte, error) {
	s, err := exchangeScript.Run(ctx, k.cfg.Redis, []string{k.cfg.Name}, hex.EncodeToString(candidate)).Text()
	if err != nil {
		return nil, err
	}
	b, err := hex.DecodeString(s)
	if err != nil || len(b) < 16 {
		return nil, fmt.Errorf("%s holds no key of this gateway's (%d characters)", k.cfg.Name, len(s))
	}
	return b, nil
}
