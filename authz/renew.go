package authz

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// Renewal ahead of expiry. A cached key is trusted for CacheTTL (1 s); a key
// in use would then be read again on the request path, one round trip per
// key per second, each on one request's time. Instead, the first hit on an
// entry older than half its TTL queues the key, and a background loop reads
// the queued keys of a short window (CacheTTL/20) in one pipeline and
// re-caches them. A key in steady use is so read once per half TTL or a
// little more, off the request path, and many keys share a round trip: with
// 10,000 keys in use, some twenty pipelines a second instead of 10,000
// lookups.
//
// The bound on revocation does not move: a renewal caches what Redis said at
// the renewal's start, and an entry is still trusted for CacheTTL from its
// last reading only; when a renewal is late or fails, the request that finds
// the entry past its TTL reads it on the request path as before (with the
// stale-copy fallback of an outage).

// maxRenewBatch bounds one renewal pipeline.
const maxRenewBatch = 512

// renewSoon queues e's key for renewal, once; it never blocks: when the
// queue is full the key is read on the request path at its TTL, as without
// renewals.
func (k *verifier) renewSoon(e *entry, d *digest) {
	if e.renewing.Load() || !e.renewing.CompareAndSwap(false, true) {
		return
	}
	select {
	case k.renewals <- *d:
	default:
		e.renewing.Store(false)
	}
}

func (k *verifier) renewLoop() {
	defer k.wg.Done()
	batch := make([]digest, 0, maxRenewBatch)
	for {
		select {
		case <-k.done:
			return
		case d := <-k.renewals:
			batch = append(batch[:0], d)
		}
		// Wait a moment for the keys that reach half their TTL meanwhile,
		// unless a full batch is already waiting.
		if batch = k.drainRenewals(batch); len(batch) < maxRenewBatch {
			t := time.NewTimer(k.renewWait)
			select {
			case <-k.done:
				t.Stop()
				return
			case <-t.C:
			}
			batch = k.drainRenewals(batch)
		}
		k.renew(batch)
	}
}

// drainRenewals appends the queued renewals to batch, up to a full batch.
func (k *verifier) drainRenewals(batch []digest) []digest {
	for len(batch) < maxRenewBatch {
		select {
		case d := <-k.renewals:
			batch = append(batch, d)
		default:
			return batch
		}
	}
	return batch
}

// renew reads the records of batch in one pipeline and applies each as a
// lookup would: re-cached if still active, else dropped and remembered as
// invalid. Keys evicted from the cache meanwhile are not brought back.
// Nothing is renewed while Redis is known to be down: the request path's
// fallback answers then.
func (k *verifier) renew(batch []digest) {
	now := k.now().UnixNano()
	if until := k.downUntil.Load(); until != 0 && now < until {
		k.renewDone(batch)
		k.stats.renewFailed.Add(uint64(len(batch)))
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), k.timeout)
	defer cancel()
	pipe := k.rdb.Pipeline()
	cmds := make([]*redis.MapStringStringCmd, len(batch))
	for i := range batch {
		cmds[i] = pipe.HGetAll(ctx, k.l.recordOf(&batch[i]))
	}
	_, _ = pipe.Exec(ctx) // each command carries its own error
	failed := 0
	for i := range batch {
		d := &batch[i]
		old := k.pos.get(d)
		if old == nil {
			continue // evicted or dropped (a revocation announced) meanwhile
		}
		m, err := cmds[i].Result()
		if err != nil {
			old.renewing.Store(false)
			failed++
			continue
		}
		if _, err := k.settle(d, old.key.Mode, m, now); errors.Is(err, ErrInvalidKey) {
			k.stats.renewDropped.Add(1)
		} else {
			k.stats.renewed.Add(1)
		}
	}
	if failed > 0 {
		k.stats.renewFailed.Add(uint64(failed))
		k.log.Debug("authz: key renewals failed; the keys are read on their next use past the cache TTL", "keys", failed)
	}
}

// renewDone clears the renewal marks of batch's entries that are still
// cached, so that a later hit queues them again.
func (k *verifier) renewDone(batch []digest) {
	for i := range batch {
		if e := k.pos.get(&batch[i]); e != nil {
			e.renewing.Store(false)
		}
	}
}
