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
// never changed after it is stored, except for touched.
type entry struct {
	key      Key
	verified int64
	// touched is when this instance last queued a last-used write for the
	// key; it throttles those writes.
	touched atomic.Int64
}

// posCache holds verified keys, bounded to about size entries.
type posCache struct {
	perShard int
	s        [shards]struct {
		mu sync.RWMutex
		m  map[digest]*entry
		// hits is per shard so that parallel hits on different keys do not
		// all write one cache line.
		hits atomic.Uint64
	}
}

// hit counts a cache hit for Stats.
func (c *posCache) hit(d *digest) { c.s[shardOf(d)].hits.Add(1) }

func (c *posCache) hitCount() (n uint64) {
	for i := range c.s {
		n += c.s[i].hits.Load()
	}
	return n
}

func newPosCache(size int) *posCache {
	c := &posCache{perShard: max(1, size/shards)}
	for i := range c.s {
		c.s[i].m = make(map[digest]*entry)
	}
	return c
}

func (c *posCache) get(d *digest) *entry {
	s := &c.s[shardOf(d)]
	s.mu.RLock()
	e := s.m[*d]
	s.mu.RUnlock()
	return e
}

// put stores e, evicting the least recently verified of a few entries when
// the shard is full: cheap, and good enough to keep hot keys.
func (c *posCache) put(d *digest, e *entry) {
	s := &c.s[shardOf(d)]
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.m[*d]; ok {
		e.touched.Store(old.touched.Load())
	} else if len(s.m) >= c.perShard {
		var victim digest
		oldest, seen := int64(0), 0
		for k, v := range s.m { // map order is random: a random sample
			if seen == 0 || v.verified < oldest {
				victim, oldest = k, v.verified
			}
			if seen++; seen == 8 {
				break
			}
		}
		delete(s.m, victim)
	}
	s.m[*d] = e
}

func (c *posCache) drop(d *digest) {
	s := &c.s[shardOf(d)]
	s.mu.Lock()
	delete(s.m, *d)
	s.mu.Unlock()
}

func (c *posCache) len() (n int) {
	for i := range c.s {
		c.s[i].mu.RLock()
		n += len(c.s[i].m)
		c.s[i].mu.RUnlock()
	}
	return n
}

// negCache remembers digests Redis did not know (or knew as revoked) until
// an expiry time. It is separate from posCache so that a flood of invalid
// keys can only evict other invalid keys.
type negCache struct {
	perShard int
	s        [shards]struct {
		mu sync.RWMutex
		m  map[digest]int64
	}
}

func newNegCache(size int) *negCache {
	c := &negCache{perShard: max(1, size/shards)}
	for i := range c.s {
		c.s[i].m = make(map[digest]int64)
	}
	return c
}

// has reports whether d is remembered as invalid at now.
func (c *negCache) has(d *digest, now int64) bool {
	s := &c.s[shardOf(d)]
	s.mu.RLock()
	exp, ok := s.m[*d]
	s.mu.RUnlock()
	return ok && now < exp
}

func (c *negCache) add(d *digest, until int64, now int64) {
	s := &c.s[shardOf(d)]
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.m[*d]; !ok && len(s.m) >= c.perShard {
		// Prefer an expired victim among a random sample, else any.
		var victim digest
		seen := 0
		for k, exp := range s.m {
			victim = k
			if seen++; exp <= now || seen == 8 {
				break
			}
		}
		delete(s.m, victim)
	}
	s.m[*d] = until
}

func (c *negCache) drop(d *digest) {
	s := &c.s[shardOf(d)]
	s.mu.Lock()
	delete(s.m, *d)
	s.mu.Unlock()
}

func (c *negCache) len() (n int) {
	for i := range c.s {
		c.s[i].mu.RLock()
		n += len(c.s[i].m)
		c.s[i].mu.RUnlock()
	}
	return n
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
