package backend

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"
)

// An exact total costs a scan of every match: 100-400 ms on this machine for
// a company with a million documents, where the page itself takes under a
// millisecond. countCache keeps the totals of large lists for a bounded time
// instead, so that paging through them costs the page only:
//
//   - a count below exactBelow is never kept: small lists (most companies,
//     and selective filters of big ones) are counted on every request;
//   - a larger count is served until it is maxAge old, measured from the
//     moment the count began; from maxAge/2 on, the first request starts one
//     recount in the background and keeps getting the previous total;
//   - past maxAge a total is never served: requests wait for a fresh count;
//   - concurrent requests for the same list share one count (single-flight).
//
// Keys hold the company id and the list's SQL and arguments, so different
// filters and different companies never share a total.
type countCache struct {
	maxAge     time.Duration
	exactBelow int64
	maxEntries int
	now        func() time.Time

	mu      sync.Mutex
	entries map[countKey]*countEntry
}

type countKey struct {
	company string
	query   string // the count's SQL and its other arguments
}

// countEntry is one list's total, and the count running for it, if any.
type countEntry struct {
	n        int64
	asOf     time.Time // when the count that gave n began
	hasValue bool
	flight   *countFlight
}

type countFlight struct {
	done chan struct{}
	n    int64
	err  error
}

const (
	defaultTotalMaxAge     = 10 * time.Second
	defaultExactTotalBelow = 10_000
	// A search below this many matches is counted, and its page read from
	// its matches, on every request; above, its total is kept and its page
	// walked in the list's order (Config.SearchExactBelow).
	defaultSearchExactBelow = 1_000
	maxCountEntries         = 10_000
)

func newCountCache(maxAge time.Duration, exactBelow int64, now func() time.Time) *countCache {
	return &countCache{maxAge: maxAge, exactBelow: exactBelow, maxEntries: maxCountEntries, now: now,
		entries: make(map[countKey]*countEntry)}
}

// total returns the list's total: counted for this request, or kept and at
// most maxAge old. count runs the count query;
// it is called with a context detached from ctx's cancellation, since other
// requests may be waiting for the same count.
func (c *countCache) total(ctx context.Context, k countKey, count func(context.Context) (int64, error)) (int64, error) {
	return c.totalBelow(ctx, k, c.exactBelow, count)
}

// totalBelow is total for a list whose totals below exactBelow are counted
// on every request (a search's bound is lower than other lists').
func (c *countCache) totalBelow(ctx context.Context, k countKey, exactBelow int64, count func(context.Context) (int64, error)) (int64, error) {
	if c.maxAge <= 0 {
		n, err := count(ctx)
		return n, err
	}
	now := c.now()
	c.mu.Lock()
	e := c.entries[k]
	if e != nil && e.hasValue {
		if age := now.Sub(e.asOf); age < c.maxAge {
			if age >= c.maxAge/2 && e.flight == nil {
				c.start(ctx, k, e, now, exactBelow, count)
			}
			n := e.n
			c.mu.Unlock()
			return n, nil
		}
	}
	if e == nil {
		if !c.makeRoom() {
			c.mu.Unlock()
			n, err := count(ctx)
			return n, err
		}
		e = &countEntry{}
		c.entries[k] = e
	}
	f := e.flight
	if f == nil {
		f = c.start(ctx, k, e, now, exactBelow, count)
	}
	c.mu.Unlock()
	select {
	case <-f.done:
		return f.n, f.err
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// kept reports whether the cache holds a total for k that it would serve.
func (c *countCache) kept(k countKey) bool {
	if c.maxAge <= 0 {
		return false
	}
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entries[k]
	return e != nil && e.hasValue && now.Sub(e.asOf) < c.maxAge
}

// start runs count in the background for entry e; c.mu is held.
func (c *countCache) start(ctx context.Context, k countKey, e *countEntry, began time.Time, exactBelow int64, count func(context.Context) (int64, error)) *countFlight {
	f := &countFlight{done: make(chan struct{})}
	e.flight = f
	ctx = context.WithoutCancel(ctx)
	go func() {
		f.n, f.err = count(ctx)
		c.mu.Lock()
		e.flight = nil
		switch {
		case f.err == nil && f.n >= exactBelow:
			e.n, e.asOf, e.hasValue = f.n, began, true
		case f.err == nil || !e.hasValue:
			// A small list is counted on every request; a failed first count
			// leaves nothing to keep.
			if c.entries[k] == e {
				delete(c.entries, k)
			}
		}
		c.mu.Unlock()
		close(f.done)
	}()
	return f
}

// makeRoom drops totals too old to be served when the cache is full, and
// reports whether there is room for one more; c.mu is held. When every entry
// is fresh the list is simply counted without the cache: memory stays
// bounded whatever callers send.
func (c *countCache) makeRoom() bool {
	if len(c.entries) < c.maxEntries {
		return true
	}
	now := c.now()
	for k, e := range c.entries {
		if e.flight == nil && (!e.hasValue || now.Sub(e.asOf) >= c.maxAge) {
			delete(c.entries, k)
		}
	}
	return len(c.entries) < c.maxEntries
}

// listTotal is the total of a list query's matches, through the cache, read
// where the call's page is read (rd). where holds the company id as its first
// argument. A search's total is exact below Config.SearchExactBelow, and its
// count planned for its fragment; other lists' below ExactTotalBelow.
func (s *Store) listTotal(ctx context.Context, rd reader, op, from string, w where, search bool) (int64, error) {
	q, k := s.countQuery(from, w)
	exactBelow, args := s.counts.exactBelow, w.args
	if search {
		exactBelow, args = s.searchExact, s.d.plannedArgs(args)
	}
	n, err := s.counts.totalBelow(ctx, k, exactBelow, func(ctx context.Context) (int64, error) {
		ctx, cancel := s.deadline(ctx)
		defer cancel()
		var n int64
		if err := rd.one(ctx, q, args, &n); err != nil {
			return 0, s.fail(ctx, op, err)
		}
		return n, nil
	})
	if err != nil {
		return 0, s.fail(ctx, op, err)
	}
	return n, nil
}

// countQuery is the count of a list's matches, and its key in the cache.
func (s *Store) countQuery(from string, w where) (string, countKey) {
	q := s.d.rebind("SELECT count(*) FROM " + from + "\nWHERE " + w.sql())
	return q, countKeyOf(q, w)
}

// countKeyOf names the list of where w (its first argument the company id)
// by q, w's SQL, and its other arguments.
func countKeyOf(q string, w where) countKey {
	var b strings.Builder
	b.WriteString(q)
	for _, a := range w.args[1:] {
		fmt.Fprintf(&b, "\x00%T:%v", a, a)
	}
	return countKey{company: w.args[0].(string), query: b.String()}
}
