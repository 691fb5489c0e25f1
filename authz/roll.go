package authz

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/invoicing-ao/gateway/internal/durable"
	"github.com/invoicing-ao/gateway/invoicing"
	"github.com/redis/go-redis/v9"
)

// Roll-over overlaps: how long the old key keeps working beside its
// successor.
const (
	// DefaultOverlap is the overlap when the caller names none: a day to
	// deploy the new secret everywhere.
	DefaultOverlap = 24 * time.Hour
	// MaxOverlap bounds it: a roll is a replacement, not a second key.
	MaxOverlap = 30 * 24 * time.Hour
)

// ErrInvalidOverlap: an overlap below zero or above MaxOverlap.
var ErrInvalidOverlap = invoicing.Define(invoicing.Error{Kind: invoicing.Invalid, Code: "invalid_body", Title: "Invalid request body", Message: "authz: the overlap must be 0 to " + MaxOverlap.String()})

// Rolled is what Roll made: the successor (with its secret, shown this once)
// and the old key as it is now, ending at the overlap's end.
type Rolled struct {
	New    Key
	Secret string
	Old    Key
}

// Roll replaces the key keyID by a new secret of the same company, mode,
// scopes, name, networks and expiry (a roll changes the secret, never what
// the key was granted), and sets the old key to expire when overlap ends
// (0: now), or sooner if it expires sooner already.
//
// A key can be rolled once; revoked and expired keys cannot be rolled
// (ErrNotRollable). The successor takes the old key's place in the count of
// active keys, so rolling works at MaxActiveKeys; the old key waits out its
// overlap in a second count, bounded by MaxActiveKeys too (ErrRollLimit), so
// a company has at most twice MaxActiveKeys working keys however often it
// rolls.
//
// Order of writes, so that a crash never leaves a usable key uncounted:
//  1. rollScript moves the old id into the rolled count with its current
//     score and counts the new id (atomic: of concurrent rolls of a key, one
//     wins);
//  2. the new key's id index and record: its secret verifies from now on;
//  3. the old record: replaced by the new id, expiring at the overlap's end;
//  4. the old id's score becomes that expiry, so it stops counting then.
//
// A failure at 2 or 3 is undone (new record first), and so is a write of 1,
// 2 or 3 the replicas did not confirm (ErrNotReplicated: replicas.go). A
// crash after 1 leaves a new id that reclaim frees, after 1, 2 or 3 the old
// key counted until its former expiry or reclaim: slots held, never a
// usable key uncounted.
func (k *Keyring) Roll(ctx context.Context, keyID string, overlap time.Duration) (Rolled, error) {
	if overlap < 0 || overlap > MaxOverlap {
		return Rolled{}, ErrInvalidOverlap
	}
	if !validKeyID(keyID) {
		return Rolled{}, ErrNotFound
	}
	ctx, cancel := mgmt(ctx)
	defer cancel()
	old, oldHex, err := k.lookup(ctx, keyID)
	if err != nil {
		return Rolled{}, err
	}
	now := k.now().Truncate(time.Millisecond).UTC()
	if err := rollable(old, now); err != nil {
		return Rolled{}, err
	}
	end := now.Add(overlap)
	if old.ExpiresAt != nil && old.ExpiresAt.Before(end) {
		end = *old.ExpiresAt
	}
	nk := Key{
		CompanyID: old.CompanyID, Mode: old.Mode, Scopes: old.Scopes, Name: old.Name, State: StateActive,
		CreatedAt: now, ExpiresAt: old.ExpiresAt, Replaces: old.ID, AllowedCIDRs: old.AllowedCIDRs,
	}
	secret, hexD, err := k.newIdentity(&nk)
	if err != nil {
		return Rolled{}, err
	}
	prev, err := k.admitRoll(ctx, old.ID, nk, end.After(now))
	if err != nil {
		if errors.Is(err, ErrNotReplicated) {
			k.undoRoll(old, oldHex, nk, hexD, prev)
		}
		return Rolled{}, err
	}
	after, err := k.replace(ctx, old, oldHex, nk, hexD, end)
	if err != nil {
		k.undoRoll(old, oldHex, nk, hexD, prev)
		return Rolled{}, failed("roll", err)
	}
	keys := k.l.counts(old.CompanyID)
	if err := rescoreScript.Run(ctx, k.rdb, keys, k.nowMS(), old.ID, ms(end)).Err(); err != nil {
		// Not fatal, nor waited for: the old key still expires at end; its
		// slot in the rolled count is held until reclaim finds it expired.
		k.log.Warn("authz: rolled key's count not updated", "key_id", old.ID, "err", err)
	}
	if d, ok := digestOf(oldHex); ok {
		k.v.forget(&d)
	}
	k.announce(ctx, old.ID, oldHex)
	return Rolled{New: nk, Secret: secret, Old: after}, nil
}

// rollable says why key cannot be rolled at now, if it cannot.
func rollable(key Key, now time.Time) error {
	switch {
	case key.State == StateRevoked:
		return fmt.Errorf("%w: it is revoked", ErrNotRollable)
	case key.Status(now) == StateExpired:
		return fmt.Errorf("%w: it has expired", ErrNotRollable)
	case key.ReplacedBy != "":
		return fmt.Errorf("%w: it was rolled already, to %s", ErrNotRollable, key.ReplacedBy)
	}
	return nil
}

// admitRoll runs rollScript, reclaiming dead ids of the rolled count once
// when it is full, and returns the old id's former score. ErrNotReplicated
// comes with the score: the roll was admitted, unconfirmed, and the caller
// takes it back.
func (k *Keyring) admitRoll(ctx context.Context, oldID string, nk Key, outlives bool) (string, error) {
	keys := k.l.counts(nk.CompanyID)
	flag := "0"
	if outlives {
		flag = "1"
	}
	for attempt := 0; ; attempt++ {
		var v any
		err := k.repl.Write(ctx, k.rdb, keys[0], func(c redis.Cmdable) (err error) {
			v, err = rollScript.Run(ctx, c, keys, k.nowMS(), oldID, nk.ID, nk.CreatedAt.UnixMilli(),
				expiryScore(nk.ExpiresAt), flag, k.max).Result()
			return err
		})
		if err != nil && !errors.Is(err, durable.ErrNotAcknowledged) {
			return "", unavailable("roll", err)
		}
		if list, ok := v.([]any); ok && len(list) == 1 {
			if score, ok := list[0].(string); ok {
				if err != nil {
					return score, failed("roll", err)
				}
				return score, nil
			}
		}
		// A refusal changed nothing: it needs no confirmation.
		if n, _ := v.(int64); n != -1 {
			return "", fmt.Errorf("%w: it is no longer active", ErrNotRollable)
		}
		if attempt > 0 {
			return "", fmt.Errorf("%w (%d)", ErrRollLimit, k.max)
		}
		freed, err := k.reclaim(ctx, nk.CompanyID, rolledSet)
		if err != nil {
			return "", unavailable("roll", err)
		}
		if freed == 0 {
			return "", fmt.Errorf("%w (%d)", ErrRollLimit, k.max)
		}
	}
}

// replace writes the successor, then marks the old record replaced and
// expiring at end, and returns the old key as it is then.
func (k *Keyring) replace(ctx context.Context, old Key, oldHex string, nk Key, hexD string, end time.Time) (Key, error) {
	if err := k.store(ctx, nk, hexD); err != nil {
		return Key{}, err
	}
	rec := k.l.record(oldHex)
	var v any
	if err := k.repl.Write(ctx, k.rdb, rec, func(c redis.Cmdable) (err error) {
		v, err = markRolledScript.Run(ctx, c, []string{rec}, nk.ID, ms(end)).Result()
		return err
	}); err != nil {
		return Key{}, err
	}
	m, err := pairs(v)
	if err != nil {
		return Key{}, err
	}
	after, found, err := decodeRecord(m)
	if err == nil && !found {
		err = errors.New("the old key's record is gone")
	}
	return after, err
}

// undoRoll takes back a roll whose writes failed: the successor stops
// working first, then the old record loses its new expiry, then the counts
// are restored. Best effort: what it cannot undo, reclaim will. Not waited
// for (replicas.go).
func (k *Keyring) undoRoll(old Key, oldHex string, nk Key, hexD, prevScore string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if k.unstore(ctx, nk, hexD) != nil {
		return
	}
	if unmarkRolledScript.Run(ctx, k.rdb, []string{k.l.record(oldHex)}, nk.ID, optMS(old.ExpiresAt)).Err() != nil {
		return
	}
	_ = unrollScript.Run(ctx, k.rdb, k.l.counts(old.CompanyID), k.nowMS(), old.ID, nk.ID, prevScore).Err()
}
