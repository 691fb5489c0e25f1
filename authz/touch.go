package authz

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// Last-used times: a verified key's use is noted in memory and written to
// Redis in batches, at most once per key per throttle interval.

// touch queues a last-used write at most once per TouchEvery per key. It
// never blocks: when the queue is full the write is dropped.
func (k *verifier) touch(e *entry, d *digest, now int64) {
	last := e.touched.Load()
	if last != 0 && now-last < k.touchEvery {
		return
	}
	if !e.touched.CompareAndSwap(last, now) {
		return
	}
	select {
	case k.touches <- touch{d: *d, at: time.Unix(0, now)}:
	default:
	}
}

func (k *verifier) touchLoop() {
	defer k.wg.Done()
	for {
		select {
		case <-k.done:
			return
		case t := <-k.touches:
			batch := []touch{t}
		drain:
			for len(batch) < 128 {
				select {
				case t := <-k.touches:
					batch = append(batch, t)
				default:
					break drain
				}
			}
			k.writeTouches(batch)
		}
	}
}

func (k *verifier) writeTouches(batch []touch) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	pipe := k.rdb.Pipeline()
	// Eval, not Run: in a pipeline, Run cannot fall back from EVALSHA when
	// the script is not loaded yet. The writes are rare enough.
	for _, t := range batch {
		touchScript.Eval(ctx, pipe, []string{k.l.recordOf(&t.d)}, t.at.UnixMilli())
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		k.log.Debug("authz: last-used update failed", "keys", len(batch), "err", err)
	}
}
