// What one instance's caches serve, and for how long: another instance's
// revocation, a Redis outage, unknown keys and the last use it records.
// TestKeyring (keyring_test.go) runs these on each Redis.

package authz

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
	"github.com/redis/go-redis/v9"
)

// testRevocationTTL: two instances, no pub/sub. The other instance may serve
// its cached copy, but not once a second has passed.
func testRevocationTTL(t *testing.T, rdb *redis.Client, prefix string) {
	c := newClock()
	a := newRing(t, rdb, prefix, c, nil)
	b := newRing(t, rdb, prefix, c, func(cfg *Config) { cfg.CacheTTL = time.Hour }) // clamped to 1s
	key, secret := mustCreate(t, a, companyA, invoicing.Live, "invoices:read")
	if _, err := b.Verify(ctx, secret); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.Revoke(ctx, key.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Verify(ctx, secret); !errors.Is(err, ErrInvalidKey) {
		t.Fatalf("revoking instance still accepts the key: %v", err)
	}
	c.Add(999 * time.Millisecond)
	if _, err := b.Verify(ctx, secret); err != nil {
		t.Fatalf("b's cache should still serve within CacheTTL (else this test proves nothing): %v", err)
	}
	c.Add(time.Millisecond)
	if _, err := b.Verify(ctx, secret); !errors.Is(err, ErrInvalidKey) {
		t.Fatalf("1s after revocation the other instance still accepts the key: %v", err)
	}
}

// testRevocationPubSub: with pub/sub, the other instance drops its copy
// without waiting for CacheTTL; the clock does not move at all.
func testRevocationPubSub(t *testing.T, rdb *redis.Client, prefix string) {
	c := newClock()
	a := newRing(t, rdb, prefix, c, nil)
	b := newRing(t, rdb, prefix, c, func(cfg *Config) { cfg.NoPubSub = false })
	<-b.v.pubsubReady
	key, secret := mustCreate(t, a, companyA, invoicing.Live, "invoices:read")
	if _, err := b.Verify(ctx, secret); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.Revoke(ctx, key.ID); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the revocation to reach instance b", func() error {
		_, err := b.Verify(ctx, secret)
		return wantErr(err, ErrInvalidKey)
	})
}

func testOutage(t *testing.T, rdb *redis.Client, prefix string) {
	c := newClock()
	p := attachProbe(t, rdb)
	k := newRing(t, rdb, prefix, c, func(cfg *Config) { cfg.StaleTTL = time.Minute })
	_, secret := mustCreate(t, k, companyA, invoicing.Live, "invoices:read")
	_, never := mustCreate(t, k, companyA, invoicing.Test, "invoices:read") // valid, but never verified here
	if _, err := k.Verify(ctx, secret); err != nil {
		t.Fatal(err)
	}
	unknown := "igw_live_" + strings.Repeat("x", secretBody)

	p.down.Store(true)
	c.Add(30 * time.Second) // past CacheTTL: Redis is asked, and fails
	if got, err := k.Verify(ctx, secret); err != nil || got.Mode != invoicing.Live {
		t.Fatalf("recently verified key during outage = %v", err)
	}
	// Until RetryEvery has passed, Verify answers from memory without
	// waiting on Redis again.
	asked := p.n("hgetall")
	for range 10 {
		if _, err := k.Verify(ctx, secret); err != nil {
			t.Fatalf("recently verified key during outage = %v", err)
		}
	}
	if n := p.n("hgetall") - asked; n != 0 {
		t.Fatalf("Redis asked %d times within RetryEvery of a failure, want 0", n)
	}
	for _, s := range []string{unknown, never} {
		if _, err := k.Verify(ctx, s); !errors.Is(err, ErrUnavailable) || errors.Is(err, ErrInvalidKey) {
			t.Fatalf("unverifiable key during outage = %v, want ErrUnavailable", err)
		}
	}
	if err := k.Ping(ctx); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Ping during outage = %v", err)
	}
	if _, _, err := k.Create(ctx, NewKey{CompanyID: companyA, Mode: invoicing.Live, Scopes: 1}); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Create during outage = %v", err)
	}
	c.Add(31 * time.Second) // 61s since the last real verification
	if _, err := k.Verify(ctx, secret); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("key verified longer than StaleTTL ago = %v, want ErrUnavailable", err)
	}

	p.down.Store(false)
	// Redis failed a moment ago: it is not asked again before RetryEvery.
	if _, err := k.Verify(ctx, secret); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("within RetryEvery of the last failure = %v, want ErrUnavailable from memory", err)
	}
	c.Add(time.Second)
	if _, err := k.Verify(ctx, secret); err != nil {
		t.Fatalf("after the outage: %v", err)
	}
	if _, err := k.Verify(ctx, unknown); !errors.Is(err, ErrInvalidKey) {
		t.Fatalf("unknown key after the outage = %v", err)
	}
}

func testNegative(t *testing.T, rdb *redis.Client, prefix string) {
	c := newClock()
	p := attachProbe(t, rdb)
	// The bound of lookups is off: its own tests are in lookups_test.go.
	k := newRing(t, rdb, prefix, c, func(cfg *Config) {
		cfg.NegativeSize, cfg.CacheSize = 64, 64
		cfg.SourceLookups.Rate, cfg.InstanceLookups.Rate = -1, -1
	})
	_, good := mustCreate(t, k, companyA, invoicing.Live, "invoices:read")
	if _, err := k.Verify(ctx, good); err != nil {
		t.Fatal(err)
	}

	// Malformed input, and a typo of the good key (its checksum tells),
	// never reach Redis. Only lookups count: the good key's last-used write
	// may land in this window from the background.
	before := p.n("hgetall")
	typo := []byte(good)
	typo[20] = map[bool]byte{true: 'b', false: 'a'}[typo[20] == 'a']
	for _, bad := range []string{"", "nope", "igw_live_short", good + "x", strings.Replace(good, "igw_live_", "igw_prod_", 1), good[:len(good)-1] + "!",
		string(typo), strings.Replace(good, "igw_live_", "igw_test_", 1)} {
		if _, err := k.Verify(ctx, bad); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("Verify(malformed) = %v", err)
		}
	}
	if n := p.n("hgetall") - before; n != 0 {
		t.Errorf("malformed keys cost %d Redis lookups", n)
	}

	// A well-formed unknown key: one lookup, then remembered.
	unknown := "igw_test_" + strings.Repeat("Q", secretBody)
	before = p.n("hgetall")
	for i := 0; i < 100; i++ {
		if _, err := k.Verify(ctx, unknown); !errors.Is(err, ErrInvalidKey) {
			t.Fatalf("Verify(unknown) = %v", err)
		}
	}
	if n := p.n("hgetall") - before; n != 1 {
		t.Errorf("100 tries of one unknown key cost %d lookups, want 1", n)
	}
	c.Add(time.Second) // NegativeTTL
	k.Verify(ctx, unknown)
	if n := p.n("hgetall") - before; n != 2 {
		t.Errorf("after NegativeTTL the unknown key should be asked again: %d lookups", n)
	}

	// A flood of distinct invalid keys fills the negative cache only, which
	// stays bounded; the good key is still answered from memory.
	c.Add(-time.Second) // back inside the good key's CacheTTL
	for i := 0; i < 1000; i++ {
		k.Verify(ctx, fmt.Sprintf("igw_live_%0*d", secretBody, i))
	}
	if n := k.v.neg.len(); n > 64 {
		t.Errorf("negative cache holds %d digests, bound 64", n)
	}
	before = p.n()
	if _, err := k.Verify(ctx, good); err != nil {
		t.Fatal(err)
	}
	if n := p.n() - before; n != 0 {
		t.Errorf("the flood evicted the good key: its check cost %d commands", n)
	}

	// Concurrent first checks of one key share a single lookup.
	other := "igw_test_" + strings.Repeat("R", secretBody)
	before = p.n("hgetall")
	var wg sync.WaitGroup
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); k.Verify(ctx, other) }()
	}
	wg.Wait()
	if n := p.n("hgetall") - before; n < 1 || n > 3 {
		t.Errorf("50 concurrent checks of one key cost %d lookups", n)
	}
}

func testLastUsed(t *testing.T, rdb *redis.Client, prefix string) {
	c := newClock()
	p := attachProbe(t, rdb)
	k := newRing(t, rdb, prefix, c, nil)
	key, secret := mustCreate(t, k, companyA, invoicing.Live, "invoices:read")
	if key.LastUsedAt != nil {
		t.Fatal("new key has a last-used time")
	}
	first := c.Now()
	for i := 0; i < 100; i++ {
		if _, err := k.Verify(ctx, secret); err != nil {
			t.Fatal(err)
		}
	}
	testenv.Eventually(t, "last-used to be written", func() error { return lastUsed(k, key.ID, first) })
	touches := p.n("evalsha", "eval")
	c.Add(30 * time.Second)
	for i := 0; i < 100; i++ {
		k.Verify(ctx, secret)
	}
	c.Add(31 * time.Second)
	k.Verify(ctx, secret)
	later := c.Now()
	testenv.Eventually(t, "the next last-used write, a minute later", func() error { return lastUsed(k, key.ID, later) })
	if n := p.n("evalsha", "eval") - touches; n != 1 {
		t.Errorf("201 checks over a minute wrote last-used %d more times, want 1", n)
	}
}
