package authz

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/invoicing-ao/gateway/internal/durable"
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
// reclaim). A failed write is undone at once, record first; so is one the
// replicas did not confirm (ErrNotReplicated: replicas.go).
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
		return Key{}, "", invoicing.InvalidField(ErrInvalidName, "name", "must be at most %d bytes of printable text", MaxNameLen)
	}
	if !validCIDRs(nk.AllowedCIDRs) {
		return Key{}, "", fmt.Errorf("%w: use ParseCIDRs", ErrInvalidCIDR)
	}
	now := k.now().Truncate(time.Millisecond).UTC()
	key := Key{
		CompanyID: company, Mode: nk.Mode, Scopes: nk.Scopes, Name: nk.Name, State: StateActive, CreatedAt: now,
		AllowedCIDRs: canonicalCIDRs(slices.Clone(nk.AllowedCIDRs)),
	}
	if nk.ExpiresAt != nil {
		exp := nk.ExpiresAt.Truncate(time.Millisecond).UTC()
		if !exp.After(now) {
			return Key{}, "", invoicing.InvalidField(ErrInvalidExpiry, "expiresAt", "must be in the future")
		}
		key.ExpiresAt = &exp
	}
	secret, hexD, err := k.newIdentity(&key)
	if err != nil {
		return Key{}, "", err
	}
	ctx, cancel := mgmt(ctx)
	defer cancel()
	if err := k.admit(ctx, key); err != nil {
		if errors.Is(err, ErrNotReplicated) {
			k.undo(key, hexD)
		}
		return Key{}, "", err
	}
	if err := k.store(ctx, key, hexD); err != nil {
		k.undo(key, hexD)
		return Key{}, "", failed("create", err)
	}
	return key, secret, nil
}

// newIdentity gives key a fresh secret, id and hint, and returns the secret
// and its digest's hex.
func (k *Keyring) newIdentity(key *Key) (secret, hexD string, err error) {
	if secret, err = newSecret(key.Mode); err != nil {
		return "", "", fmt.Errorf("authz: random source: %w", err)
	}
	if key.ID, err = newKeyID(); err != nil {
		return "", "", fmt.Errorf("authz: random source: %w", err)
	}
	key.Hint, key.LegacyForm = hint(secret), false
	d := sha256.Sum256([]byte(secret))
	return secret, hex.EncodeToString(d[:]), nil
}

// store writes a new key's id index, then its record: only now can its
// secret verify. Each write waits for the replicas (they may live on
// different Cluster masters).
func (k *Keyring) store(ctx context.Context, key Key, hexD string) error {
	byID, rec := k.l.byID(key.ID), k.l.record(hexD)
	if err := k.repl.Write(ctx, k.rdb, byID, func(c redis.Cmdable) error {
		return c.Set(ctx, byID, hexD, 0).Err()
	}); err != nil {
		return err
	}
	if err := k.repl.Write(ctx, k.rdb, rec, func(c redis.Cmdable) error {
		return c.HSet(ctx, rec, encodeRecord(key)...).Err()
	}); err != nil {
		return err
	}
	// Only this instance could have remembered the digest as invalid, and
	// only if someone guessed 256 random bits; drop it all the same.
	if d, ok := digestOf(hexD); ok {
		k.v.stored(&d)
	}
	return nil
}

// digestOf reads a digest's hex back.
func digestOf(hexD string) (digest, bool) {
	var d digest
	b, err := hex.DecodeString(hexD)
	if err != nil || len(b) != len(d) {
		return d, false
	}
	copy(d[:], b)
	return d, true
}

// nowMS is the clock in the scripts' form: every script of a company first
// forgets the ids expired by then.
func (k *Keyring) nowMS() int64 { return k.now().UnixMilli() }

// admit counts key against its company's limit, reclaiming dead ids once
// when the limit is hit. ErrNotReplicated means key was counted, unconfirmed:
// the caller takes it back.
func (k *Keyring) admit(ctx context.Context, key Key) error {
	keys := k.l.counts(key.CompanyID)
	for attempt := 0; ; attempt++ {
		var ok int
		err := k.repl.Write(ctx, k.rdb, keys[0], func(c redis.Cmdable) (err error) {
			ok, err = countScript.Run(ctx, c, keys, k.nowMS(), k.max, key.ID, key.CreatedAt.UnixMilli(), expiryScore(key.ExpiresAt)).Int()
			return err
		})
		if err != nil && (ok != 0 || !errors.Is(err, durable.ErrNotAcknowledged)) {
			// A refusal (0) added nothing: it needs no confirmation.
			return failed("create", err)
		}
		if ok == 1 {
			return nil
		}
		if attempt > 0 {
			return fmt.Errorf("%w (%d)", ErrKeyLimit, k.max)
		}
		freed, err := k.reclaim(ctx, key.CompanyID, countedSet)
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
// cannot undo, reclaim will. Not waited for: the secret was never returned.
func (k *Keyring) undo(key Key, hexD string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if k.unstore(ctx, key, hexD) != nil {
		return
	}
	_ = uncountScript.Run(ctx, k.rdb, k.l.counts(key.CompanyID), k.nowMS(), key.ID, "1").Err()
}

// unstore deletes a new key's record, then its id index.
func (k *Keyring) unstore(ctx context.Context, key Key, hexD string) error {
	if err := k.rdb.Del(ctx, k.l.record(hexD)).Err(); err != nil {
		return err
	}
	return k.rdb.Del(ctx, k.l.byID(key.ID)).Err()
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
// returns it unchanged; revoked is true only for the call that revoked it.
//
// ErrRevocationNotReplicated comes with the key and revoked as they are:
// the revocation is in effect, but fewer than MinReplicas replicas confirmed
// it, and a Redis failover could undo it. Revoking again confirms it.
func (k *Keyring) Revoke(ctx context.Context, keyID string) (key Key, revoked bool, err error) {
	if !validKeyID(keyID) {
		return Key{}, false, ErrNotFound
	}
	ctx, cancel := mgmt(ctx)
	defer cancel()
	hexD, err := k.rdb.Get(ctx, k.l.byID(keyID)).Result()
	if errors.Is(err, redis.Nil) {
		return Key{}, false, ErrNotFound
	}
	if err != nil {
		return Key{}, false, unavailable("revoke", err)
	}
	// The record first: the key stops working before its slot is freed, so
	// a crash in between leaves it revoked and merely still counted, which
	// revoking again, or reclaim, repairs.
	rec := k.l.record(hexD)
	var v []any
	werr := k.repl.Write(ctx, k.rdb, rec, func(c redis.Cmdable) (err error) {
		v, err = revokeScript.Run(ctx, c, []string{rec}, k.now().UnixMilli()).Slice()
		return err
	})
	unconfirmed := errors.Is(werr, durable.ErrNotAcknowledged)
	if werr != nil && !unconfirmed {
		return Key{}, false, unavailable("revoke", werr)
	}
	if len(v) != 2 {
		return Key{}, false, ErrNotFound
	}
	m, err := pairs(v[1])
	if err != nil {
		return Key{}, false, err
	}
	key, found, err := decodeRecord(m)
	if err != nil {
		return Key{}, false, err
	}
	if !found {
		return Key{}, false, ErrNotFound
	}
	if d, ok := digestOf(hexD); ok {
		k.v.revoked(&d)
	}
	if unconfirmed {
		// In effect on the master: every instance is told at once. The
		// slot stays counted until a confirmed revocation frees it, so
		// that a failover undoing the revocation finds the key counted.
		k.announce(ctx, key.ID, hexD)
		return key, v[0] == int64(1), fmt.Errorf("%w: %w", ErrRevocationNotReplicated, werr)
	}
	err = uncountScript.Run(ctx, k.rdb, k.l.counts(key.CompanyID), k.nowMS(), key.ID, "0").Err()
	if err != nil {
		return Key{}, false, unavailable("revoke", err)
	}
	k.announce(ctx, key.ID, hexD)
	return key, v[0] == int64(1), nil
}

// announce tells the other instances to drop their cached copy of a key
// whose record changed; they would reread it within CacheTTL anyway.
func (k *Keyring) announce(ctx context.Context, keyID, hexD string) {
	if err := k.rdb.Publish(ctx, k.l.channel(), hexD).Err(); err != nil {
		k.log.Warn("authz: key change not broadcast", "key_id", keyID, "err", err)
	}
}
