package authz

// Reclaiming a company's key slots: the ids a crash left counted but that are
// no usable key.

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// The sets of a company's count, as indexes of layout.counts.
const (
	countedSet = 0
	rolledSet  = 1
)

// reclaim frees the slots of one of the company's counts (countedSet or
// rolledSet) held by ids that are no usable key: creations and rolls that
// crashed half way (no record, older than orphanGrace: younger ones may be
// in flight), and keys whose record is revoked or expired while a crash kept
// them counted.
func (k *Keyring) reclaim(ctx context.Context, company string, set int) (int, error) {
	keys := k.l.counts(company)
	ids, err := k.rdb.ZRange(ctx, keys[set], 0, -1).Result()
	if err != nil {
		return 0, err
	}
	now := k.now()
	freed := 0
	for _, id := range ids {
		orphan, dead, err := k.deadID(ctx, keys[2], id, now)
		if err != nil {
			return freed, err
		}
		if !dead {
			continue
		}
		flag := "0"
		if orphan {
			flag = "1"
		}
		if err := uncountScript.Run(ctx, k.rdb, keys, now.UnixMilli(), id, flag).Err(); err != nil {
			return freed, err
		}
		k.log.Warn("authz: reclaimed a key slot left by an interrupted operation", "key_id", id, "company", company, "orphan", orphan)
		freed++
	}
	return freed, nil
}

// deadID tells whether a counted id is no usable key, and whether it is an
// orphan (no record at all).
func (k *Keyring) deadID(ctx context.Context, all, id string, now time.Time) (orphan, dead bool, err error) {
	hexD, err := k.rdb.Get(ctx, k.l.byID(id)).Result()
	var m map[string]string
	switch {
	case errors.Is(err, redis.Nil):
	case err != nil:
		return false, false, err
	default:
		if m, err = k.rdb.HGetAll(ctx, k.l.record(hexD)).Result(); err != nil {
			return false, false, err
		}
	}
	if key, found, err := decodeRecord(m); found {
		return false, err == nil && key.Status(now) != StateActive, nil
	}
	score, err := k.rdb.ZScore(ctx, all, id).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return false, false, err
	}
	young := err == nil && int64(score) > now.Add(-orphanGrace).UnixMilli()
	return !young, !young, nil
}
