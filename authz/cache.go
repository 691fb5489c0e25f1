package authz

import (
	"context"
	"sync"
	"sync/atomic"
)

// digest is a secret's SHA-256. Caches are keyed by the array itself: no hex
// string is built on the hot path.
type digest = [32]byte

const shards = 32

func shardOf(d *digest) int { return int(d[0]) % shards }

// entry is a key Redis confirmed at verified (unix nanoseconds). An entry is
// never changed after it is stored, except for touched and renewing.
type entry struct {
	key      Key
	verified int64
	// expires is the key's expiry (unix nanoseconds; 0 none), compared with
	// the clock on every hit: an expired key is refused at its expiry, not
	// up to CacheTTL later.
	expires int64
	// touched is when this instance last queued a last-used write for the
	// key; it throttles those writes.
	touched atomic.Int64
	// renewing is set while a renewal of the entry is queued or in flight
	// (renew.go), so that one is sent per entry.
	renewing atomic.Bool
}

// expired reports whether the entry's key is past its expiry at now.
func (e *entry) expired(now int64) bool { return e.expires != 0 && now >= e.expires }

// shardedMap is a map keyed by digest, split in shards each under its own
// lock, so that verifications of different keys rarely wait for each other.
type shardedMap[V any] struct {
	perShard int // the bound of each shard
	s        [shards]struct {
		mu sync.RWMutex
		m  map[digest]V
		// hits is per shard so that parallel hits on different keys do not
		// all write one cache line; so is legacy, the verifications of
		// secrets of the first form.
		hits, legacy atomic.Uint64
	}
}

func (c *shardedMap[V]) init(size int) {
	c.perShard = max(1, size/shards)
	for i := range c.s {
		c.s[i].m = make(map[digest]V)
	}
}

func (c *shardedMap[V]) load(d *digest) (V, bool) {
	s := &c.s[shardOf(d)]
	s.mu.RLock()
	v, ok := s.m[*d]
	s.mu.RUnlock()
	return v, ok
}

// store sets d to v; when d is new and its shard full, it first evicts the
// key victim picks from the shard's entries (map order is random: a random
// sample).
func (c *shardedMap[V]) store(d *digest, v V, victim func(m map[digest]V) digest) {
	s := &c.s[shardOf(d)]
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.m[*d]; !ok && len(s.m) >= c.perShard {
		delete(s.m, victim(s.m))
	}
	s.m[*d] = v
}

func (c *shardedMap[V]) drop(d *digest) {
	s := &c.s[shardOf(d)]
	s.mu.Lock()
	delete(s.m, *d)
	s.mu.Unlock()
}

func (c *shardedMap[V]) len() (n int) {
	for i := range c.s {
		c.s[i].mu.RLock()
		n += len(c.s[i].m)
		c.s[i].mu.RUnlock()
	}
	return n
}

// posCache holds verified keys, bounded to about size entries.
type posCache struct{ shardedMap[*entry] }

func newPosCache(size int) *posCache {
	c := &posCache{}
	c.init(size)
	return c
}

// hit counts a cache hit for Stats, and for LookupStats one of a secret of
// the first form.
func (c *posCache) hit(d *digest, legacy bool) {
	s := &c.s[shardOf(d)]
	s.hits.Add(1)
	if legacy {
		s.legacy.Add(1)
	}
}

// countLegacy counts a verification of a secret of the first form that was
// not a hit.
func (c *posCache) countLegacy(d *digest) { c.s[shardOf(d)].legacy.Add(1) }

func (c *posCache) hitCount() (n uint64) {
	for i := range c.s {
		n += c.s[i].hits.Load()
	}
	return n
}

func (c *posCache) legacyCount() (n uint64) {
	for i := range c.s {
		n += c.s[i].legacy.Load()
	}
	return n
}

func (c *posCache) get(d *digest) *entry {
	e, _ := c.load(d)
	return e
}

// put stores e (keeping the replaced entry's touched time), evicting the
// least recently verified of a few entries when the shard is full: cheap, and
// good enough to keep hot keys.
func (c *posCache) put(d *digest, e *entry) {
	if old := c.get(d); old != nil {
		e.touched.Store(old.touched.Load())
	}
	c.store(d, e, func(m map[digest]*entry) (victim digest) {
		oldest, seen := int64(0), 0
		for k, v := range m {
			if seen == 0 || v.verified < oldest {
				victim, oldest = k, v.verified
			}
			if seen++; seen == 8 {
				break
			}
		}
		return victim
	})
}

// negCache remembers digests Redis did not know (or knew as revoked) until
// an expiry time. It is separate from posCache so that a flood of invalid
// keys can only evict other invalid keys.
type negCache struct{ shardedMap[int64] }

func newNegCache(size int) *negCache {
	c := &negCache{}
	c.init(size)
	return c
}

// has reports whether d is remembered as invalid at now.
func (c *negCache) has(d *digest, now int64) bool {
	exp, ok := c.load(d)
	return ok && now < exp
}

// add remembers d as invalid until then, preferring an expired victim among
// a random sample when the shard is full.
func (c *negCache) add(d *digest, until int64, now int64) {
	c.store(d, until, func(m map[digest]int64) (victim digest) {
		seen := 0
		for k, exp := range m {
			victim = k
			if seen++; exp <= now || seen == 8 {
				break
			}
		}
		return victim
	})
}

// flight lets one caller per digest ask Redis while the others wait for its
// answer, so that a cache expiry under load, or a burst of one bad key, is
// one round trip and not hundreds.
type flight struct {
	mu    sync.Mutex
	calls map[digest]*call
}

type call struct {
	done chan struct{}
	key  Key
	err  error
}

// do runs fn for d unless a run is already in flight, whose result it then
// shares. A waiter whose ctx ends first gets ctx's error; fn itself must be
// bounded in time.
func (f *flight) do(ctx context.Context, d *digest, fn func() (Key, error)) (Key, error) {
	f.mu.Lock()
	if f.calls == nil {
		f.calls = make(map[digest]*call)
	}
	if c, ok := f.calls[*d]; ok {
		f.mu.Unlock()
		select {
		case <-c.done:
			return c.key, c.err
		case <-ctx.Done():
			return Key{}, ctx.Err()
		}
	}
	c := &call{done: make(chan struct{})}
	f.calls[*d] = c
	f.mu.Unlock()

	defer func() {
		f.mu.Lock()
		delete(f.calls, *d)
		f.mu.Unlock()
		close(c.done)
	}()
	c.key, c.err = fn()
	return c.key, c.err
}
