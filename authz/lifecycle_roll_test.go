// Rolling a key: the new key and the old one's overlap, the company's limit,
// concurrent rolls, a roll that fails half-way and a dead key's slot.
// TestKeyLifecycle (lifecycle_test.go) runs these on each Redis.

package authz

import (
	"errors"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
	"github.com/redis/go-redis/v9"
)

func testRoll(t *testing.T, rdb *redis.Client, prefix string) {
	c := newClock()
	a := newRing(t, rdb, prefix, c, func(cfg *Config) { cfg.MaxActiveKeys = 2 })
	b := newRing(t, rdb, prefix, c, func(cfg *Config) { cfg.MaxActiveKeys = 2 })
	nets, _ := ParseCIDRs([]string{"203.0.113.0/24"})
	scopes, _ := ParseScopes("invoices:read,clients:write")
	old, oldSecret := createWith(t, a, NewKey{Mode: invoicing.Test, Scopes: scopes, Name: "ERP", AllowedCIDRs: nets})
	createWith(t, a, NewKey{})
	if _, err := b.Verify(ctx, oldSecret); err != nil { // b caches the old key
		t.Fatal(err)
	}

	c.Add(time.Second)
	r := checkRollWithOverlap(t, a, b, c, old, oldSecret, scopes, nets)
	r2 := checkRollWithoutOverlap(t, a, b, c, r)
	rx := checkRollKeepsExpiry(t, a, c, r2)
	checkNotRollable(t, a, c, old, r2, rx)
	assertNoSecretStored(t, rdb, prefix, oldSecret, r.Secret, r2.Secret, rx.Secret)
}

// checkRollWithOverlap rolls old at the limit: the successor takes its
// place, both work until the overlap ends, on a and on b.
func checkRollWithOverlap(t *testing.T, a, b *Keyring, c *testenv.Clock, old Key, oldSecret string, scopes ScopeSet, nets []netip.Prefix) Rolled {
	t.Helper()
	r, err := a.Roll(ctx, old.ID, time.Hour)
	if err != nil {
		t.Fatalf("Roll at the limit: %v", err)
	}
	n := r.New
	if n.ID == old.ID || n.CompanyID != companyA || n.Mode != invoicing.Test || n.Scopes != scopes || n.Name != "ERP" ||
		!slices.Equal(n.AllowedCIDRs, nets) || n.Replaces != old.ID || n.ExpiresAt != nil || !n.CreatedAt.Equal(c.Now()) {
		t.Errorf("successor = %+v", n)
	}
	if !strings.HasPrefix(r.Secret, "igw_test_") || r.Secret == oldSecret {
		t.Errorf("successor's secret is not a new TEST secret")
	}
	end := c.Now().Add(time.Hour)
	if r.Old.ReplacedBy != n.ID || r.Old.ExpiresAt == nil || !r.Old.ExpiresAt.Equal(end) {
		t.Errorf("old key after the roll = %+v, want replaced by %s, expiring at %v", r.Old, n.ID, end)
	}
	for _, s := range []string{oldSecret, r.Secret} {
		if _, err := a.Verify(ctx, s); err != nil {
			t.Fatalf("during the overlap: %v", err)
		}
	}
	if g, _ := b.Get(ctx, n.ID); g.Replaces != old.ID {
		t.Errorf("Get(new).Replaces = %q", g.Replaces)
	}
	if _, _, err := a.Create(ctx, NewKey{CompanyID: companyA, Mode: invoicing.Live, Scopes: 1}); !errors.Is(err, ErrKeyLimit) {
		t.Errorf("a roll freed a slot for a new key: %v", err)
	}
	if _, err := a.Roll(ctx, old.ID, time.Hour); !errors.Is(err, ErrNotRollable) {
		t.Errorf("second roll of a key = %v, want ErrNotRollable", err)
	}
	// The other instance sees the new expiry within CacheTTL.
	c.Set(end)
	if _, err := a.Verify(ctx, oldSecret); !errors.Is(err, ErrExpiredKey) {
		t.Errorf("old key at the overlap's end = %v", err)
	}
	if _, err := b.Verify(ctx, oldSecret); !errors.Is(err, ErrExpiredKey) {
		t.Errorf("old key at the overlap's end, other instance = %v", err)
	}
	if _, err := b.Verify(ctx, r.Secret); err != nil {
		t.Errorf("successor after the overlap: %v", err)
	}
	return r
}

// checkRollWithoutOverlap rolls r's successor with overlap 0: the rolled
// key ends now, on every instance within CacheTTL.
func checkRollWithoutOverlap(t *testing.T, a, b *Keyring, c *testenv.Clock, r Rolled) Rolled {
	t.Helper()
	if _, err := b.Verify(ctx, r.Secret); err != nil {
		t.Fatal(err)
	}
	r2, err := a.Roll(ctx, r.New.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Verify(ctx, r.Secret); !errors.Is(err, ErrExpiredKey) {
		t.Errorf("rolled with no overlap, same instance = %v", err)
	}
	c.Add(999 * time.Millisecond)
	if _, err := b.Verify(ctx, r.Secret); err != nil {
		t.Fatalf("b's cache should still serve within CacheTTL (else this test proves nothing): %v", err)
	}
	c.Add(time.Millisecond)
	if _, err := b.Verify(ctx, r.Secret); !errors.Is(err, ErrExpiredKey) {
		t.Errorf("rolled with no overlap, other instance after CacheTTL = %v", err)
	}
	return r2
}

// checkRollKeepsExpiry revokes r2's successor and rolls a key that expires
// soon: a roll never extends a key, the old one keeps its sooner expiry and
// the new one inherits it.
func checkRollKeepsExpiry(t *testing.T, a *Keyring, c *testenv.Clock, r2 Rolled) Rolled {
	t.Helper()
	if _, _, err := a.Revoke(ctx, r2.New.ID); err != nil {
		t.Fatal(err)
	}
	short := c.Now().Add(time.Minute)
	x, _ := createWith(t, a, NewKey{ExpiresAt: at(short)})
	if _, _, err := a.Create(ctx, NewKey{CompanyID: companyA, Mode: invoicing.Live, Scopes: 1}); !errors.Is(err, ErrKeyLimit) {
		t.Fatalf("limit: %v", err)
	}
	rx, err := a.Roll(ctx, x.ID, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if !rx.Old.ExpiresAt.Equal(short) || rx.New.ExpiresAt == nil || !rx.New.ExpiresAt.Equal(short) {
		t.Errorf("rolled an expiring key: old until %v, new until %v; want both %v", rx.Old.ExpiresAt, rx.New.ExpiresAt, short)
	}
	return rx
}

// checkNotRollable: revoked (r2's successor), expired (rx's, once its minute
// passes) and unknown keys are not rolled; nor is old with a bad overlap.
func checkNotRollable(t *testing.T, a *Keyring, c *testenv.Clock, old Key, r2, rx Rolled) {
	t.Helper()
	if _, err := a.Roll(ctx, r2.New.ID, 0); !errors.Is(err, ErrNotRollable) {
		t.Errorf("roll of a revoked key = %v", err)
	}
	c.Add(time.Minute)
	if _, err := a.Roll(ctx, rx.New.ID, 0); !errors.Is(err, ErrNotRollable) {
		t.Errorf("roll of an expired key = %v", err)
	}
	for _, id := range []string{"key_aaaaaaaaaaaaaaaaaaaa", "nonsense"} {
		if _, err := a.Roll(ctx, id, 0); !errors.Is(err, ErrNotFound) {
			t.Errorf("Roll(%q) = %v", id, err)
		}
	}
	for _, d := range []time.Duration{-time.Second, MaxOverlap + time.Millisecond} {
		if _, err := a.Roll(ctx, old.ID, d); !errors.Is(err, ErrInvalidOverlap) {
			t.Errorf("Roll with overlap %v = %v", d, err)
		}
	}
}

// testRollLimit: keys in their overlap are bounded too, so rolling again
// and again cannot pile up working keys.
func testRollLimit(t *testing.T, rdb *redis.Client, prefix string) {
	c := newClock()
	k := newRing(t, rdb, prefix, c, func(cfg *Config) { cfg.MaxActiveKeys = 2 })
	k1, _ := createWith(t, k, NewKey{})
	k2, _ := createWith(t, k, NewKey{})
	r1, err := k.Roll(ctx, k1.ID, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	c.Add(time.Minute)
	r2, err := k.Roll(ctx, r1.New.ID, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{r2.New.ID, k2.ID} {
		if _, err := k.Roll(ctx, id, time.Hour); !errors.Is(err, ErrRollLimit) {
			t.Fatalf("a third key in overlap = %v, want ErrRollLimit", err)
		}
	}
	// Without overlap nothing waits: allowed.
	r3, err := k.Roll(ctx, k2.ID, 0)
	if err != nil {
		t.Fatalf("roll without overlap at the overlap limit: %v", err)
	}
	// Revoking a key in overlap frees its place, and so does its end.
	if _, _, err := k.Revoke(ctx, k1.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := k.Roll(ctx, r3.New.ID, time.Hour); err != nil {
		t.Fatalf("after revoking a key in overlap: %v", err)
	}
	c.Add(time.Hour)
	if _, err := k.Roll(ctx, r2.New.ID, time.Hour); err != nil {
		t.Fatalf("after an overlap ended: %v", err)
	}
}

func testRollConcurrent(t *testing.T, rdb *redis.Client, prefix string) {
	c := newClock()
	a := newRing(t, rdb, prefix, c, nil)
	b := newRing(t, rdb, prefix, c, nil)
	old, _ := createWith(t, a, NewKey{})
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		won    []Rolled
		others []error
	)
	for i := range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ring := a
			if i%2 == 1 {
				ring = b
			}
			r, err := ring.Roll(ctx, old.ID, time.Hour)
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				won = append(won, r)
			} else if !errors.Is(err, ErrNotRollable) {
				others = append(others, err)
			}
		}()
	}
	wg.Wait()
	if len(won) != 1 || len(others) != 0 {
		t.Fatalf("10 concurrent rolls of one key: %d won, errors %v; want exactly one", len(won), others)
	}
	if l, _ := a.List(ctx, companyA); len(l) != 2 {
		t.Errorf("List = %d keys, want the old one and its one successor", len(l))
	}
	if g, _ := a.Get(ctx, old.ID); g.ReplacedBy != won[0].New.ID {
		t.Errorf("old key replaced by %q, want %q", g.ReplacedBy, won[0].New.ID)
	}
}

// testRollFailure: when Redis fails half way through a roll, the roll is
// taken back: the old key works as before and can be rolled again.
func testRollFailure(t *testing.T, rdb *redis.Client, prefix string) {
	c := newClock()
	p := attachProbe(t, rdb)
	k := newRing(t, rdb, prefix, c, func(cfg *Config) { cfg.MaxActiveKeys = 2 })
	old, oldSecret := createWith(t, k, NewKey{})
	createWith(t, k, NewKey{})
	p.failOn(func(cmd redis.Cmder) bool { return cmd.Name() == "hset" }) // the successor's record
	if _, err := k.Roll(ctx, old.ID, time.Hour); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Roll with a failing write = %v, want ErrUnavailable", err)
	}
	p.failOn(nil)
	c.Add(2 * time.Hour)
	g, err := k.Get(ctx, old.ID)
	if err != nil || g.ReplacedBy != "" || g.ExpiresAt != nil {
		t.Fatalf("old key after a failed roll = %+v, %v", g, err)
	}
	if _, err := k.Verify(ctx, oldSecret); err != nil {
		t.Fatalf("old key after a failed roll: %v", err)
	}
	if l, _ := k.List(ctx, companyA); len(l) != 2 {
		t.Errorf("List = %d keys; the failed successor must not be listed", len(l))
	}
	if _, _, err := k.Create(ctx, NewKey{CompanyID: companyA, Mode: invoicing.Live, Scopes: 1}); !errors.Is(err, ErrKeyLimit) {
		t.Errorf("the count changed: %v", err)
	}
	if _, err := k.Roll(ctx, old.ID, time.Hour); err != nil {
		t.Errorf("rolling again after a failed roll: %v", err)
	}
}

// testReclaimDead: a key revoked or expired while a crash kept it counted
// frees its slot when the limit is hit.
func testReclaimDead(t *testing.T, rdb *redis.Client, prefix string) {
	c := newClock()
	k := newRing(t, rdb, prefix, c, func(cfg *Config) { cfg.MaxActiveKeys = 2 })
	a, _ := createWith(t, k, NewKey{})
	createWith(t, k, NewKey{})
	if _, _, err := k.Revoke(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	keys := layout{p: prefix}.counts(companyA)
	rdb.ZAdd(ctx, keys[0], redis.Z{Score: 1e300, Member: a.ID}) // as if the revocation crashed half way
	if _, err := rdb.ZScore(ctx, keys[0], a.ID).Result(); err != nil {
		t.Fatal(err)
	}
	createWith(t, k, NewKey{})
	if _, err := rdb.ZScore(ctx, keys[0], a.ID).Result(); !errors.Is(err, redis.Nil) {
		t.Errorf("the revoked key still counts: %v", err)
	}
	if l, _ := k.List(ctx, companyA); len(l) != 3 {
		t.Errorf("List = %d, want the revoked key still listed", len(l))
	}
}
