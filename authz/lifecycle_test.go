package authz

import (
	"errors"
	"net/netip"
	"slices"
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
	if b.v.neg.len() != 0 {
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
