package authz

import (
	"errors"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
)

// TestKeyLifecycle is the conformance suite of expiry, networks and rolls,
// on real Redis and on miniredis.
func TestKeyLifecycle(t *testing.T) {
	t.Parallel()
	testenv.RedisBackends(t, func(t *testing.T, rdb *redis.Client, prefix string) {
		t.Run("expiry", func(t *testing.T) { testExpiry(t, rdb, prefix+"exp:") })
		t.Run("expired keys do not count", func(t *testing.T) { testExpiryCount(t, rdb, prefix+"expcount:") })
		t.Run("count of before expiry", func(t *testing.T) { testLegacyCount(t, rdb, prefix+"legacy:") })
		t.Run("networks", func(t *testing.T) { testNetworks(t, rdb, prefix+"net:") })
		t.Run("roll", func(t *testing.T) { testRoll(t, rdb, prefix+"roll:") })
		t.Run("roll limit", func(t *testing.T) { testRollLimit(t, rdb, prefix+"rolllimit:") })
		t.Run("concurrent rolls", func(t *testing.T) { testRollConcurrent(t, rdb, prefix+"rollrace:") })
		t.Run("roll failure", func(t *testing.T) { testRollFailure(t, rdb, prefix+"rollfail:") })
		t.Run("reclaim dead keys", func(t *testing.T) { testReclaimDead(t, rdb, prefix+"dead:") })
	})
}

func createWith(t *testing.T, k *Keyring, nk NewKey) (Key, string) {
	t.Helper()
	if nk.CompanyID == "" {
		nk.CompanyID = companyA
	}
	if nk.Mode == "" {
		nk.Mode = invoicing.Live
	}
	if nk.Scopes == 0 {
		nk.Scopes, _ = ParseScopes("invoices:read")
	}
	key, secret, err := k.Create(ctx, nk)
	if err != nil {
		t.Fatalf("Create(%+v): %v", nk, err)
	}
	return key, secret
}

func at(t time.Time) *time.Time { return &t }

func testExpiry(t *testing.T, rdb *redis.Client, prefix string) {
	c := newClock()
	p := attachProbe(t, rdb)
	a := newRing(t, rdb, prefix, c, func(cfg *Config) { cfg.StaleTTL = time.Hour })
	b := newRing(t, rdb, prefix, c, nil) // a second instance

	for _, when := range []time.Time{c.Now(), c.Now().Add(-time.Hour)} {
		if _, s, err := a.Create(ctx, NewKey{CompanyID: companyA, Mode: invoicing.Live, Scopes: 1, ExpiresAt: at(when)}); !errors.Is(err, ErrInvalidExpiry) || s != "" {
			t.Fatalf("Create expiring at %v (now %v) = %v, want ErrInvalidExpiry", when, c.Now(), err)
		}
	}
	expires := c.Now().Add(10 * time.Second)
	key, secret := createWith(t, a, NewKey{ExpiresAt: at(expires.Add(300 * time.Microsecond))}) // kept to the ms
	if key.ExpiresAt == nil || !key.ExpiresAt.Equal(expires) {
		t.Fatalf("created key expires at %v, want %v", key.ExpiresAt, expires)
	}
	for _, ring := range []*Keyring{a, b} {
		got, err := ring.Verify(ctx, secret)
		if err != nil || got.ExpiresAt == nil || !got.ExpiresAt.Equal(expires) {
			t.Fatalf("Verify before expiry = %+v, %v", got, err)
		}
	}
	c.Set(expires.Add(-time.Millisecond))
	for _, ring := range []*Keyring{a, b} {
		if _, err := ring.Verify(ctx, secret); err != nil {
			t.Fatalf("a millisecond before expiry: %v", err)
		}
	}
	// At the expiry both instances refuse it, from memory: the cached copy
	// is compared with the clock on every use, not trusted for CacheTTL.
	c.Set(expires)
	asked := p.n("hgetall")
	for range 100 {
		for _, ring := range []*Keyring{a, b} {
			if _, err := ring.Verify(ctx, secret); !errors.Is(err, ErrExpiredKey) {
				t.Fatalf("Verify at expiry = %v, want ErrExpiredKey", err)
			}
		}
	}
	if n := p.n("hgetall") - asked; n != 0 {
		t.Errorf("an expired cached key cost %d lookups", n)
	}
	// Asked again after CacheTTL: still expired, never "invalid" (the
	// negative cache is for unknown and revoked keys).
	c.Add(2 * time.Second)
	for range 3 {
		if _, err := b.Verify(ctx, secret); !errors.Is(err, ErrExpiredKey) {
			t.Fatalf("Verify of an expired key from Redis = %v, want ErrExpiredKey", err)
		}
	}
	if b.neg.len() != 0 {
		t.Errorf("the expired key went to the negative cache")
	}
	if g, _ := a.Get(ctx, key.ID); g.Status(c.Now()) != StateExpired || g.State != StateActive {
		t.Errorf("Get: state %q, status %q", g.State, g.Status(c.Now()))
	}
	// While Redis is down, the copy in memory still knows the expiry.
	p.down.Store(true)
	c.Add(2 * time.Second)
	if _, err := a.Verify(ctx, secret); !errors.Is(err, ErrExpiredKey) {
		t.Errorf("expired key during an outage = %v, want ErrExpiredKey", err)
	}
	p.down.Store(false)
	c.Add(2 * time.Second)
	// Revoked and expired: revoked wins.
	if _, _, err := a.Revoke(ctx, key.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Verify(ctx, secret); !errors.Is(err, ErrInvalidKey) {
		t.Errorf("revoked expired key = %v, want ErrInvalidKey", err)
	}
}

func testExpiryCount(t *testing.T, rdb *redis.Client, prefix string) {
	c := newClock()
	k := newRing(t, rdb, prefix, c, func(cfg *Config) { cfg.MaxActiveKeys = 3 })
	createWith(t, k, NewKey{ExpiresAt: at(c.Now().Add(time.Minute))})
	createWith(t, k, NewKey{ExpiresAt: at(c.Now().Add(time.Hour))})
	createWith(t, k, NewKey{})
	if _, _, err := k.Create(ctx, NewKey{CompanyID: companyA, Mode: invoicing.Test, Scopes: 1}); !errors.Is(err, ErrKeyLimit) {
		t.Fatalf("4th key = %v, want ErrKeyLimit", err)
	}
	c.Add(time.Minute) // the first expires: its slot is free, the others hold
	createWith(t, k, NewKey{})
	if _, _, err := k.Create(ctx, NewKey{CompanyID: companyA, Mode: invoicing.Test, Scopes: 1}); !errors.Is(err, ErrKeyLimit) {
		t.Fatalf("after one expiry, a second new key = %v, want ErrKeyLimit", err)
	}
	c.Add(time.Hour)
	createWith(t, k, NewKey{})
	if l, _ := k.List(ctx, companyA); len(l) != 5 {
		t.Errorf("List = %d keys, want all 5, expired ones included", len(l))
	}
}

// testLegacyCount: a company counted in the set of before expiry existed
// keeps its count; the next step moves it into the sorted set.
func testLegacyCount(t *testing.T, rdb *redis.Client, prefix string) {
	c := newClock()
	k := newRing(t, rdb, prefix, c, func(cfg *Config) { cfg.MaxActiveKeys = 3 })
	a, _ := createWith(t, k, NewKey{})
	b, _ := createWith(t, k, NewKey{})
	keys := layout{p: prefix}.counts(companyA)
	// The layout of before: the same ids in a plain set.
	if err := rdb.Del(ctx, keys[0]).Err(); err != nil {
		t.Fatal(err)
	}
	rdb.SAdd(ctx, keys[3], a.ID, b.ID)
	createWith(t, k, NewKey{})
	if _, _, err := k.Create(ctx, NewKey{CompanyID: companyA, Mode: invoicing.Live, Scopes: 1}); !errors.Is(err, ErrKeyLimit) {
		t.Fatalf("4th key with 2 counted the old way = %v, want ErrKeyLimit", err)
	}
	if n := rdb.Exists(ctx, keys[3]).Val(); n != 0 {
		t.Errorf("the old set is still there")
	}
	if s := rdb.ZScore(ctx, keys[0], a.ID).Val(); s < 1e300 {
		t.Errorf("an adopted key scores %v, want +inf (no expiry)", s)
	}
	// Revoking an adopted key frees its slot.
	if _, _, err := k.Revoke(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	createWith(t, k, NewKey{})
}

func TestParseCIDRs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   []string
		want string // formatCIDRs of the result, or "error"
	}{
		{nil, ""},
		{[]string{"203.0.113.0/24"}, "203.0.113.0/24"},
		{[]string{" 10.1.2.3/8 "}, "10.0.0.0/8"},
		{[]string{"198.51.100.7"}, "198.51.100.7/32"},
		{[]string{"2001:DB8::1/32", "2001:db8::/32"}, "2001:db8::/32"},
		{[]string{"::1"}, "::1/128"},
		{[]string{"::ffff:192.0.2.0/120"}, "192.0.2.0/24"},
		{[]string{"::ffff:192.0.2.9"}, "192.0.2.9/32"},
		{[]string{"2001:db8::/32", "10.0.0.0/8", "10.0.0.0/8"}, "10.0.0.0/8,2001:db8::/32"},
		{[]string{"0.0.0.0/0"}, "0.0.0.0/0"},
		{[]string{""}, "error"},
		{[]string{"10.0.0.0/33"}, "error"},
		{[]string{"10.0.0"}, "error"},
		{[]string{"fe80::1%eth0"}, "error"},
		{[]string{"example.com"}, "error"},
		{[]string{"10.0.0.0/8,10.1.0.0/16"}, "error"},
		{[]string{"::ffff:0:0/80"}, "error"},
		{slices.Repeat([]string{"10.0.0.0/8"}, MaxCIDRs+1), "error"},
	} {
		got, err := ParseCIDRs(tc.in)
		s := formatCIDRs(got)
		if err != nil {
			s = "error"
			if !errors.Is(err, ErrInvalidCIDR) {
				t.Errorf("ParseCIDRs(%q) = %v, not ErrInvalidCIDR", tc.in, err)
			}
		}
		if s != tc.want {
			t.Errorf("ParseCIDRs(%q) = %q, want %q", tc.in, s, tc.want)
		}
	}
}

func TestAllowsSource(t *testing.T) {
	t.Parallel()
	nets, _ := ParseCIDRs([]string{"203.0.113.0/24", "2001:db8::/32"})
	k := Key{AllowedCIDRs: nets}
	for addr, want := range map[string]bool{
		"203.0.113.9": true, "203.0.114.1": false, "::ffff:203.0.113.9": true,
		"2001:db8::77": true, "2001:db9::1": false, "fe80::1%eth0": false, "127.0.0.1": false,
	} {
		if got := k.AllowsSource(netip.MustParseAddr(addr)); got != want {
			t.Errorf("AllowsSource(%s) = %v", addr, got)
		}
	}
	if k.AllowsSource(netip.Addr{}) {
		t.Error("an unknown source passes a key with networks")
	}
	if !(Key{}).AllowsSource(netip.Addr{}) || !(Key{}).AllowsSource(netip.MustParseAddr("192.0.2.1")) {
		t.Error("a key without networks refuses a source")
	}
}

func testNetworks(t *testing.T, rdb *redis.Client, prefix string) {
	k := newRing(t, rdb, prefix, newClock(), nil)
	nets, err := ParseCIDRs([]string{"2001:db8::/32", "203.0.113.0/24"})
	if err != nil {
		t.Fatal(err)
	}
	key, secret := createWith(t, k, NewKey{AllowedCIDRs: nets})
	got, err := k.Verify(ctx, secret)
	if err != nil || formatCIDRs(got.AllowedCIDRs) != "203.0.113.0/24,2001:db8::/32" {
		t.Fatalf("Verify = %v, %v", got.AllowedCIDRs, err)
	}
	if g, _ := k.Get(ctx, key.ID); !slices.Equal(g.AllowedCIDRs, got.AllowedCIDRs) {
		t.Errorf("Get = %v", g.AllowedCIDRs)
	}
	if l, _ := k.List(ctx, companyA); len(l) != 1 || !slices.Equal(l[0].AllowedCIDRs, got.AllowedCIDRs) {
		t.Errorf("List = %+v", l)
	}
	_, plain := createWith(t, k, NewKey{})
	if got, _ := k.Verify(ctx, plain); len(got.AllowedCIDRs) != 0 {
		t.Errorf("a key without networks has %v", got.AllowedCIDRs)
	}
	// Networks that did not come through ParseCIDRs are checked too.
	for _, bad := range [][]netip.Prefix{
		{netip.MustParsePrefix("10.1.2.3/8")},
		{netip.MustParsePrefix("::ffff:10.0.0.0/104")},
		{{}},
		slices.Repeat([]netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}, MaxCIDRs+1),
	} {
		if _, _, err := k.Create(ctx, NewKey{CompanyID: companyA, Mode: invoicing.Live, Scopes: 1, AllowedCIDRs: bad}); !errors.Is(err, ErrInvalidCIDR) {
			t.Errorf("Create with %v = %v, want ErrInvalidCIDR", bad, err)
		}
	}
}

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

	// At the limit, a roll works: the successor takes the old key's place.
	c.Add(time.Second)
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

	// Overlap 0: the old key ends now, on every instance within CacheTTL.
	if _, err := b.Verify(ctx, r.Secret); err != nil {
		t.Fatal(err)
	}
	r2, err := a.Roll(ctx, n.ID, 0)
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

	// A roll never extends a key: the old one keeps its sooner expiry, the
	// new one inherits it.
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

	// Revoked, expired and unknown keys are not rolled; nor bad overlaps.
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
	assertNoSecretStored(t, rdb, prefix, oldSecret, r.Secret, r2.Secret, rx.Secret)
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
