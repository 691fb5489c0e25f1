// Package redisscan lists the keys that match a pattern on every master of
// a Redis: the one server (or Sentinel's master), or each master of a
// Cluster, where a SCAN sees only its own node's keys. It is how an
// adapter finds its records to export them (state) without an index of
// them kept on every write.
package redisscan

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"github.com/redis/go-redis/v9"
)

// batch is the COUNT hint of each SCAN: a few thousand keys a round trip.
const batch = 1000

// Keys returns the keys matching match (a SCAN pattern), sorted. A key
// written or deleted while it runs may be in the answer or not, as SCAN
// promises; every key there from start to end is.
func Keys(ctx context.Context, rdb redis.UniversalClient, match string) ([]string, error) {
	var (
		mu  sync.Mutex
		out []string
	)
	scan := func(ctx context.Context, c redis.Cmdable) error {
		it := c.Scan(ctx, 0, match, batch).Iterator()
		var keys []string
		for it.Next(ctx) {
			keys = append(keys, it.Val())
		}
		if err := it.Err(); err != nil {
			return fmt.Errorf("redisscan: SCAN %s: %w", match, err)
		}
		mu.Lock()
		out = append(out, keys...)
		mu.Unlock()
		return nil
	}
	var err error
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error { return scan(ctx, c) })
	} else {
		err = scan(ctx, rdb)
	}
	if err != nil {
		return nil, err
	}
	sort.Strings(out)
	// SCAN may return a key more than once.
	uniq := out[:0]
	for i, k := range out {
		if i == 0 || k != out[i-1] {
			uniq = append(uniq, k)
		}
	}
	return uniq, nil
}
