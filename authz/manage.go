package authz

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/invoicing-ao/gateway/invoicing"
	"github.com/redis/go-redis/v9"
)

// Create makes a key and returns it with its secret, which is shown this
// once and kept nowhere: Redis holds only its SHA-256.
//
// Order of writes, chosen so that a crash between any two steps never leaves
// a usable key that is not counted against the limit:
//  1. countScript admits the new id in the company's slot (check and add
//     are atomic, so concurrent creations cannot exceed MaxActiveKeys);
//  2. the id index is written;
//  3. the record is written, and only now can the secret verify.
//
// A crash after 1 or 2 leaves an id counted with no record behind it: no
// secret was returned and none verifies, so nothing is usable, at worst a
// slot is held. Such orphans are reclaimed when the limit is hit (see
// reclaim). A failed write is undone at once, record first.
func (k *Keyring) Create(ctx context.Context, nk NewKey) (Key, string, error) {
	company, err := invoicing.ParseCompanyID(nk.CompanyID)
	if err != nil {
		return Key{}, "", err
	}
	if nk.Mode != invoicing.Live && nk.Mode != invoicing.Test {
		return Key{}, "", fmt.Errorf("%w: %q", invoicing.ErrInvalidMode, invoicing.Clip(string(nk.Mode)))
	}
	if !nk.Scopes.valid() {
		return Key{}, "", fmt.Errorf("%w: scope set %d", ErrUnknownScope, nk.Scopes)
	}
	if !validName(nk.Name) {
		return Key{}, "", ErrInvalidName
	}
	secret, err := newSecret(nk.Mode)
	if err != nil {
		return Key{}, "", fmt.Errorf("authz: random source: %w", err)
	}
	id, err := newKeyID()
	if err != nil {
		return Key{}, "", fmt.Errorf("authz: random source: %w", err)
	}
	d := sha256.Sum256([]byte(secret))
	hexD := hex.EncodeToString(d[:])
	key := Key{
		ID: id, CompanyID: company, Mode: nk.Mode, Scopes: nk.Scopes, Name: nk.Name,
		Hint: hint(secret), State: StateActive,
		CreatedAt: k.now().Truncate(time.Millisecond).UTC(),
	}

	ctx, cancel := mgmt(ctx)
	defer cancel()
	if err := k.admit(ctx, key); err != nil {
		return Key{}, "", err
	}
	if err := k.rdb.Set(ctx, k.l.byID(id), hexD, 0).Err(); err != nil {
		k.undo(key, hexD)
		return Key{}, "", unavailable("create", err)
	}
	if err := k.rdb.HSet(ctx, k.l.record(hexD), encodeRecord(key)...).Err(); err != nil {
		k.undo(key, hexD)
		return Key{}, "", unavailable("create", err)
	}
	// Only this instance could have remembered the digest as invalid, and
	// only if someone guessed 256 random bits; drop it all the same.
	k.neg.drop(&d)
	return key, secret, nil
}

// admit counts key against its company's limit, reclaiming orphaned ids once
// when the limit is hit.
func (k *Keyring) admit(ctx context.Context, key Key) error {
	keys := []string{k.l.active(key.CompanyID), k.l.all(key.CompanyID)}
	for attempt := 0; ; attempt++ {
		ok, err := countScript.Run(ctx, k.rdb, keys, k.max, key.ID, key.CreatedAt.UnixMilli()).Int()
		if err != nil {
			return unavailable("create", err)
		}
		if ok == 1 {
			return nil
		}
		if attempt > 0 {
			return fmt.Errorf("%w (%d)", ErrKeyLimit, k.max)
		}
		freed, err := k.reclaim(ctx, key.CompanyID)
		if err != nil {
			return unavailable("create", err)
		}
		if freed == 0 {
			return fmt.Errorf("%w (%d)", ErrKeyLimit, k.max)
		}
	}
}

// undo takes back a creation whose writes failed, record first so that the
// key stops being usable before it stops being counted. Best effort: what it
// cannot undo, reclaim will.
func (k *Keyring) undo(key Key, hexD string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := k.rdb.Del(ctx, k.l.record(hexD)).Err(); err != nil {
		return
	}
	if err := k.rdb.Del(ctx, k.l.byID(key.ID)).Err(); err != nil {
		return
	}
	_ = uncountScript.Run(ctx, k.rdb, []string{k.l.active(key.CompanyID), k.l.all(key.CompanyID)}, key.ID, "1").Err()
}

// reclaim removes from the company's count the ids older than orphanGrace
// that have no record: creations that crashed half way. Younger ones may be
// creations still in flight and are left alone.
func (k *Keyring) reclaim(ctx context.Context, company string) (int, error) {
	active, all := k.l.active(company), k.l.all(company)
	ids, err := k.rdb.SMembers(ctx, active).Result()
	if err != nil {
		return 0, err
	}
	cutoff := k.now().Add(-orphanGrace).UnixMilli()
	freed := 0
	for _, id := range ids {
		score, err := k.rdb.ZScore(ctx, all, id).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return freed, err
		}
		if err == nil && int64(score) > cutoff {
			continue
		}
		hexD, err := k.rdb.Get(ctx, k.l.byID(id)).Result()
		switch {
		case errors.Is(err, redis.Nil):
		case err != nil:
			return freed, err
		default:
			n, err := k.rdb.Exists(ctx, k.l.record(hexD)).Result()
			if err != nil {
				return freed, err
			}
			if n == 1 {
				continue
			}
		}
		if err := uncountScript.Run(ctx, k.rdb, []string{active, all}, id, "1").Err(); err != nil {
			return freed, err
		}
		k.log.Warn("authz: reclaimed a key id left by an interrupted creation", "key_id", id, "company", company)
		freed++
	}
	return freed, nil
}

// Get returns the key with this id, active or revoked.
func (k *Keyring) Get(ctx context.Context, keyID string) (Key, error) {
	if !validKeyID(keyID) {
		return Key{}, ErrNotFound
	}
	ctx, cancel := mgmt(ctx)
	defer cancel()
	key, _, err := k.lookup(ctx, keyID)
	return key, err
}

// lookup resolves an id to its record and digest (hex).
func (k *Keyring) lookup(ctx context.Context, keyID string) (Key, string, error) {
	hexD, err := k.rdb.Get(ctx, k.l.byID(keyID)).Result()
	if errors.Is(err, redis.Nil) {
		return Key{}, "", ErrNotFound
	}
	if err != nil {
		return Key{}, "", unavailable("get", err)
	}
	m, err := k.rdb.HGetAll(ctx, k.l.record(hexD)).Result()
	if err != nil {
		return Key{}, "", unavailable("get", err)
	}
	key, found, err := decodeRecord(m)
	if err != nil {
		return Key{}, "", err
	}
	if !found {
		return Key{}, "", ErrNotFound
	}
	return key, hexD, nil
}

// List returns the company's keys, active and revoked, newest first.
func (k *Keyring) List(ctx context.Context, companyID string) ([]Key, error) {
	company, err := invoicing.ParseCompanyID(companyID)
	if err != nil {
		return nil, err
	}
	ctx, cancel := mgmt(ctx)
	defer cancel()
	ids, err := k.rdb.ZRevRange(ctx, k.l.all(company), 0, -1).Result()
	if err != nil {
		return nil, unavailable("list", err)
	}
	if len(ids) == 0 {
		return []Key{}, nil
	}
	// Two pipelined round trips; on Cluster, go-redis splits them by slot.
	pipe := k.rdb.Pipeline()
	idx := make([]*redis.StringCmd, len(ids))
	for i, id := range ids {
		idx[i] = pipe.Get(ctx, k.l.byID(id))
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, unavailable("list", err)
	}
	pipe = k.rdb.Pipeline()
	recs := make([]*redis.MapStringStringCmd, 0, len(ids))
	for _, c := range idx {
		if hexD, err := c.Result(); err == nil {
			recs = append(recs, pipe.HGetAll(ctx, k.l.record(hexD)))
		}
	}
	if len(recs) > 0 {
		if _, err := pipe.Exec(ctx); err != nil {
			return nil, unavailable("list", err)
		}
	}
	out := make([]Key, 0, len(recs))
	for _, c := range recs {
		key, found, err := decodeRecord(c.Val())
		if err != nil {
			k.log.Error("authz: unreadable key record", "company", company, "err", err)
			continue
		}
		if found { // not found: a creation in flight, or an orphan
			out = append(out, key)
		}
	}
	return out, nil
}

// Revoke makes the key unusable: at once on this instance, within CacheTTL
// (normally at once, through pub/sub) on every other. Revoking a revoked key
// returns it unchanged.
func (k *Keyring) Revoke(ctx context.Context, keyID string) (Key, error) {
	if !validKeyID(keyID) {
		return Key{}, ErrNotFound
	}
	ctx, cancel := mgmt(ctx)
	defer cancel()
	hexD, err := k.rdb.Get(ctx, k.l.byID(keyID)).Result()
	if errors.Is(err, redis.Nil) {
		return Key{}, ErrNotFound
	}
	if err != nil {
		return Key{}, unavailable("revoke", err)
	}
	// The record first: the key stops working before its slot is freed, so
	// a crash in between leaves it revoked and merely still counted, which
	// revoking again repairs.
	v, err := revokeScript.Run(ctx, k.rdb, []string{k.l.record(hexD)}, k.now().UnixMilli()).Result()
	if err != nil {
		return Key{}, unavailable("revoke", err)
	}
	m, err := pairs(v)
	if err != nil {
		return Key{}, err
	}
	key, found, err := decodeRecord(m)
	if err != nil {
		return Key{}, err
	}
	if !found {
		return Key{}, ErrNotFound
	}
	if b, err := hex.DecodeString(hexD); err == nil && len(b) == 32 {
		var d digest
		copy(d[:], b)
		k.pos.drop(&d)
		now := k.now().UnixNano()
		k.neg.add(&d, now+k.negTTL, now)
	}
	err = uncountScript.Run(ctx, k.rdb, []string{k.l.active(key.CompanyID), k.l.all(key.CompanyID)}, key.ID, "0").Err()
	if err != nil {
		return Key{}, unavailable("revoke", err)
	}
	if err := k.rdb.Publish(ctx, k.l.channel(), hexD).Err(); err != nil {
		// Not fatal: the other instances still notice within CacheTTL.
		k.log.Warn("authz: revocation not broadcast", "key_id", key.ID, "err", err)
	}
	return key, nil
}
