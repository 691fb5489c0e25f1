package authz

import (
	"crypto/sha256"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
)

// cached is the cache entry of secret, nil when none.
func cached(k *Keyring, secret string) *entry {
	d := digest(sha256.Sum256([]byte(secret)))
	return k.v.pos.get(&d)
}

// testRenewal: a key in use is read again in the background once past half
// its TTL, and the request path then never waits on Redis for it.
func testRenewal(t *testing.T, rdb *redis.Client, prefix string) {
	c := newClock()
	p := attachProbe(t, rdb)
	k := newRing(t, rdb, prefix, c, nil)
	_, secret := mustCreate(t, k, companyA, invoicing.Live, "invoices:read")
	if _, err := k.Verify(ctx, secret); err != nil { // a lookup: cached now
		t.Fatal(err)
	}

	c.Add(400 * time.Millisecond) // before half the TTL: nothing to renew
	if _, err := k.Verify(ctx, secret); err != nil {
		t.Fatal(err)
	}
	if cached(k, secret).renewing.Load() {
		t.Fatal("a hit before half the TTL queued a renewal")
	}

	c.Add(200 * time.Millisecond) // past half the TTL
	lookups, misses := p.n("hgetall"), k.Stats().Misses
	if _, err := k.Verify(ctx, secret); err != nil {
		t.Fatal(err)
	}
	if k.Stats().Misses != misses {
		t.Fatal("the hit past half the TTL waited for Redis")
	}
	testenv.Eventually(t, "the renewal", func() error { return testenv.Want(k.Stats().Renewed, 1, "renewed") })
	if n := p.n("hgetall") - lookups; n != 1 {
		t.Errorf("the renewal cost %d lookups, want 1", n)
	}
	if e := cached(k, secret); e == nil || e.verified != c.Now().UnixNano() {
		t.Fatalf("renewed entry %+v, want one verified at the renewal's time", e)
	}

	// 1.2 s after the first reading, 0.6 s after the renewal: answered from
	// memory, where without the renewal the request would have asked Redis.
	c.Add(600 * time.Millisecond)
	misses = k.Stats().Misses
	if _, err := k.Verify(ctx, secret); err != nil {
		t.Fatal(err)
	}
	if k.Stats().Misses != misses {
		t.Error("a key renewed 0.6 s ago was read on the request path")
	}
}

// testRenewalRevoked: a renewal that finds the key revoked drops it at once,
// before the TTL would have; the revocation bound itself does not depend on
// renewals (testRevocationTTL).
func testRenewalRevoked(t *testing.T, rdb *redis.Client, prefix string) {
	c := newClock()
	a := newRing(t, rdb, prefix, c, nil)
	b := newRing(t, rdb, prefix, c, nil) // no pub/sub: only reading tells b
	key, secret := mustCreate(t, a, companyA, invoicing.Live, "invoices:read")
	if _, err := b.Verify(ctx, secret); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.Revoke(ctx, key.ID); err != nil {
		t.Fatal(err)
	}
	c.Add(600 * time.Millisecond)
	if _, err := b.Verify(ctx, secret); err != nil {
		t.Fatalf("within its TTL the cached copy answers (else this test proves nothing): %v", err)
	}
	testenv.Eventually(t, "the renewal to drop the key", func() error { return testenv.Want(b.Stats().RenewDropped, 1, "dropped") })
	if _, err := b.Verify(ctx, secret); !errors.Is(err, ErrInvalidKey) {
		t.Fatalf("after the renewal found it revoked: %v, want ErrInvalidKey", err)
	}
}

// testRenewalOutage: a renewal that fails changes nothing: the copy answers
// until its TTL, and the next hit may queue it again.
func testRenewalOutage(t *testing.T, rdb *redis.Client, prefix string) {
	c := newClock()
	p := attachProbe(t, rdb)
	k := newRing(t, rdb, prefix, c, nil)
	_, secret := mustCreate(t, k, companyA, invoicing.Live, "invoices:read")
	if _, err := k.Verify(ctx, secret); err != nil {
		t.Fatal(err)
	}
	verified := cached(k, secret).verified
	p.down.Store(true)
	c.Add(600 * time.Millisecond)
	if _, err := k.Verify(ctx, secret); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the renewal to fail", func() error { return testenv.Want(k.Stats().RenewFailed, 1, "failed") })
	e := cached(k, secret)
	if e == nil || e.verified != verified || e.renewing.Load() {
		t.Fatalf("after a failed renewal: %+v, want the first reading, not marked", e)
	}
	p.down.Store(false)
	if _, err := k.Verify(ctx, secret); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the renewal after the outage", func() error { return testenv.Want(k.Stats().Renewed, 1, "renewed") })
}

// testRenewalBatch: keys that reach half their TTL together are read in one
// pipeline.
func testRenewalBatch(t *testing.T, rdb *redis.Client, prefix string) {
	c := newClock()
	p := attachProbe(t, rdb)
	k := newRing(t, rdb, prefix, c, nil)
	// A window long enough for the test's five hits on any machine; set
	// before the first renewal is queued (the queue orders it).
	k.v.renewWait = 2 * time.Second
	var secrets []string
	for range 5 {
		_, s := mustCreate(t, k, companyA, invoicing.Live, "invoices:read")
		if _, err := k.Verify(ctx, s); err != nil {
			t.Fatal(err)
		}
		secrets = append(secrets, s)
	}
	c.Add(600 * time.Millisecond)
	pipes := p.pipes.Load()
	for _, s := range secrets {
		if _, err := k.Verify(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	testenv.Eventually(t, "the renewals", func() error { return testenv.Want(k.Stats().Renewed, 5, "renewed") })
	if n := p.pipes.Load() - pipes; n != 1 {
		t.Errorf("5 renewals took %d pipelines, want 1", n)
	}
	if n := p.n("hgetall"); n != 10 {
		t.Errorf("%d lookups, want 5 readings and 5 renewals", n)
	}
}
