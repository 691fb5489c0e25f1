package authz

import (
	"context"
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

var ctx = context.Background()

// TestKeyring is the conformance suite, run on real Redis and on miniredis.
func TestKeyring(t *testing.T) {
	t.Parallel()
	testenv.RedisBackends(t, func(t *testing.T, rdb *redis.Client, prefix string) {
		t.Run("lifecycle", func(t *testing.T) { testLifecycle(t, rdb, prefix+"life:") })
		t.Run("validation", func(t *testing.T) { testValidation(t, rdb, prefix+"val:") })
		t.Run("limit", func(t *testing.T) { testLimit(t, rdb, prefix+"limit:") })
		t.Run("reclaim", func(t *testing.T) { testReclaim(t, rdb, prefix+"reclaim:") })
		t.Run("revocation across instances", func(t *testing.T) { testRevocationTTL(t, rdb, prefix+"rev:") })
		t.Run("revocation pubsub", func(t *testing.T) { testRevocationPubSub(t, rdb, prefix+"pubsub:") })
		t.Run("outage", func(t *testing.T) { testOutage(t, rdb, prefix+"outage:") })
		t.Run("negative cache", func(t *testing.T) { testNegative(t, rdb, prefix+"neg:") })
		t.Run("last used", func(t *testing.T) { testLastUsed(t, rdb, prefix+"used:") })
		t.Run("renewal", func(t *testing.T) { testRenewal(t, rdb, prefix+"renew:") })
		t.Run("renewal sees revocation", func(t *testing.T) { testRenewalRevoked(t, rdb, prefix+"renewrev:") })
		t.Run("renewal in an outage", func(t *testing.T) { testRenewalOutage(t, rdb, prefix+"renewout:") })
		t.Run("renewals share a pipeline", func(t *testing.T) { testRenewalBatch(t, rdb, prefix+"renewbatch:") })
	})
}

func testLifecycle(t *testing.T, rdb *redis.Client, prefix string) {
	c := newClock()
	k := newRing(t, rdb, prefix, c, nil)

	live, liveSecret := mustCreate(t, k, companyA, invoicing.Live, "invoices:read,clients:read")
	c.Add(time.Second)
	upper := strings.ToUpper(companyA)
	scopes, _ := ParseScopes("clients:write")
	test, testSecret, err := k.Create(ctx, NewKey{CompanyID: upper, Mode: invoicing.Test, Scopes: scopes, Name: "ERP sandbox"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(liveSecret, "igw_live_") || !strings.HasPrefix(testSecret, "igw_test_") {
		t.Fatal("secret prefix does not show the mode")
	}
	if test.CompanyID != companyA {
		t.Errorf("company id not normalized: %q", test.CompanyID)
	}
	if live.State != StateActive || live.ID == "" || !validKeyID(live.ID) || live.CreatedAt.IsZero() {
		t.Errorf("created key: %+v", live)
	}

	for _, tc := range []struct {
		secret string
		want   Key
	}{{liveSecret, live}, {testSecret, test}} {
		got, err := k.Verify(ctx, tc.secret)
		if err != nil {
			t.Fatalf("Verify: %v", err)
		}
		if got.ID != tc.want.ID || got.Mode != tc.want.Mode || got.Scopes != tc.want.Scopes ||
			got.CompanyID != companyA || got.Hint != tc.want.Hint || !got.CreatedAt.Equal(tc.want.CreatedAt) {
			t.Errorf("Verify = %+v, want %+v", got, tc.want)
		}
		g, err := k.Get(ctx, tc.want.ID)
		if err != nil || g.ID != tc.want.ID || g.Name != tc.want.Name || !g.CreatedAt.Equal(tc.want.CreatedAt) {
			t.Errorf("Get = %+v, %v", g, err)
		}
	}
	got, _ := k.Verify(ctx, liveSecret)
	if err := got.Authorize(companyA, InvoicesRead); err != nil {
		t.Errorf("Authorize: %v", err)
	}
	if err := got.Authorize(companyB, InvoicesRead); !errors.Is(err, ErrWrongCompany) {
		t.Errorf("Authorize other company: %v", err)
	}
	if err := got.Authorize(companyA, ClientsWrite); !errors.Is(err, ErrMissingScope) {
		t.Errorf("Authorize missing scope: %v", err)
	}

	// Another company's keys stay apart.
	other, _ := mustCreate(t, k, companyB, invoicing.Live, "invoices:read")

	list, err := k.List(ctx, companyA)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].ID != test.ID || list[1].ID != live.ID {
		t.Fatalf("List = %+v, want newest first [test, live]", list)
	}
	for _, key := range list {
		for _, s := range []string{liveSecret, testSecret} {
			if strings.Contains(fmt.Sprintf("%+v", key), s[prefixLen:prefixLen+12]) {
				t.Errorf("listed key shows part of a secret: %+v", key)
			}
		}
	}
	if l, _ := k.List(ctx, companyB); len(l) != 1 || l[0].ID != other.ID {
		t.Errorf("List(B) = %+v", l)
	}
	if l, err := k.List(ctx, "11111111-2222-3333-4444-555555555555"); err != nil || len(l) != 0 {
		t.Errorf("List(unknown company) = %v, %v", l, err)
	}

	// Redis holds no secret, not even a long piece of one.
	assertNoSecretStored(t, rdb, prefix, liveSecret, testSecret)

	// Revocation: immediate on this instance, idempotent.
	c.Add(time.Second)
	rev, changed, err := k.Revoke(ctx, live.ID)
	if err != nil || !changed || rev.State != StateRevoked || rev.RevokedAt == nil {
		t.Fatalf("Revoke = %+v, %v, %v", rev, changed, err)
	}
	if _, err := k.Verify(ctx, liveSecret); !errors.Is(err, ErrInvalidKey) {
		t.Errorf("Verify revoked = %v", err)
	}
	c.Add(time.Second)
	again, changed, err := k.Revoke(ctx, live.ID)
	if err != nil || changed || again.State != StateRevoked || !again.RevokedAt.Equal(*rev.RevokedAt) {
		t.Errorf("second Revoke = %+v, %v, %v (first at %v)", again, changed, err, rev.RevokedAt)
	}
	if g, _ := k.Get(ctx, live.ID); g.State != StateRevoked {
		t.Errorf("Get after revoke: %+v", g)
	}
	if l, _ := k.List(ctx, companyA); len(l) != 2 {
		t.Errorf("List after revoke shows %d keys, want active and revoked", len(l))
	}
	if _, err := k.Verify(ctx, testSecret); err != nil {
		t.Errorf("the other key must keep working: %v", err)
	}

	for _, id := range []string{"key_aaaaaaaaaaaaaaaaaaaa", "nonsense", ""} {
		if _, err := k.Get(ctx, id); !errors.Is(err, ErrNotFound) {
			t.Errorf("Get(%q) = %v", id, err)
		}
		if _, _, err := k.Revoke(ctx, id); !errors.Is(err, ErrNotFound) {
			t.Errorf("Revoke(%q) = %v", id, err)
		}
	}
	if err := k.Ping(ctx); err != nil {
		t.Errorf("Ping: %v", err)
	}
}

func assertNoSecretStored(t *testing.T, rdb *redis.Client, prefix string, secrets ...string) {
	t.Helper()
	keys, err := rdb.Keys(ctx, prefix+"*").Result()
	if err != nil || len(keys) == 0 {
		t.Fatalf("keys under prefix: %v %v", keys, err)
	}
	var dump strings.Builder
	for _, key := range keys {
		dump.WriteString(key + "\n")
		switch rdb.Type(ctx, key).Val() {
		case "hash":
			fmt.Fprintln(&dump, rdb.HGetAll(ctx, key).Val())
		case "string":
			dump.WriteString(rdb.Get(ctx, key).Val() + "\n")
		case "set":
			fmt.Fprintln(&dump, rdb.SMembers(ctx, key).Val())
		case "zset":
			fmt.Fprintln(&dump, rdb.ZRange(ctx, key, 0, -1).Val())
		}
	}
	for _, s := range secrets {
		body := s[prefixLen:]
		for i := 0; i+8 <= len(body); i++ {
			if strings.Contains(dump.String(), body[i:i+8]) {
				t.Fatalf("Redis holds 8 characters of a secret")
			}
		}
	}
}

func testValidation(t *testing.T, rdb *redis.Client, prefix string) {
	k := newRing(t, rdb, prefix, nil, nil)
	all, _ := ParseScopes("invoices:read,clients:read,clients:write")
	for _, tc := range []struct {
		nk   NewKey
		want error
	}{
		{NewKey{CompanyID: "acme", Mode: invoicing.Live, Scopes: all}, invoicing.ErrInvalidCompany},
		{NewKey{CompanyID: "", Mode: invoicing.Live, Scopes: all}, invoicing.ErrInvalidCompany},
		{NewKey{CompanyID: companyA, Mode: "PROD", Scopes: all}, invoicing.ErrInvalidMode},
		{NewKey{CompanyID: companyA, Mode: "live", Scopes: all}, invoicing.ErrInvalidMode},
		{NewKey{CompanyID: companyA, Mode: invoicing.Live, Scopes: 0}, ErrUnknownScope},
		{NewKey{CompanyID: companyA, Mode: invoicing.Live, Scopes: 1 << 6}, ErrUnknownScope},
		{NewKey{CompanyID: companyA, Mode: invoicing.Live, Scopes: all, Name: strings.Repeat("x", MaxNameLen+1)}, ErrInvalidName},
		{NewKey{CompanyID: companyA, Mode: invoicing.Live, Scopes: all, Name: "line\nbreak"}, ErrInvalidName},
	} {
		if _, s, err := k.Create(ctx, tc.nk); !errors.Is(err, tc.want) || s != "" {
			t.Errorf("Create(%+v) = %v, want %v", tc.nk, err, tc.want)
		}
	}
	if _, err := k.List(ctx, "acme"); !errors.Is(err, invoicing.ErrInvalidCompany) {
		t.Errorf("List(acme) = %v", err)
	}
	if n, _ := rdb.Keys(ctx, prefix+"*").Result(); len(n) != 0 {
		t.Errorf("refused creations wrote to Redis: %v", n)
	}
}

func testLimit(t *testing.T, rdb *redis.Client, prefix string) {
	k := newRing(t, rdb, prefix, nil, nil)
	// A second instance competes too: the limit is Redis's, not memory's.
	k2 := newRing(t, rdb, prefix, nil, nil)
	scopes, _ := ParseScopes("invoices:read")
	var (
		wg                 sync.WaitGroup
		mu                 sync.Mutex
		ok, limited, other int
	)
	for i := 0; i < 30; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ring, company := k, companyA
			if i%2 == 1 {
				ring, company = k2, strings.ToUpper(companyA) // same company, other spelling
			}
			_, _, err := ring.Create(ctx, NewKey{CompanyID: company, Mode: invoicing.Live, Scopes: scopes})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				ok++
			case errors.Is(err, ErrKeyLimit):
				limited++
			default:
				other++
				t.Errorf("Create: %v", err)
			}
		}()
	}
	wg.Wait()
	if ok != 10 || limited != 20 || other != 0 {
		t.Fatalf("30 concurrent creations: %d created, %d refused, %d errors; want 10, 20, 0", ok, limited, other)
	}
	list, _ := k.List(ctx, companyA)
	if len(list) != 10 {
		t.Fatalf("List = %d keys", len(list))
	}
	// Another company is not affected.
	mustCreate(t, k, companyB, invoicing.Test, "clients:read")

	if _, _, err := k.Revoke(ctx, list[3].ID); err != nil {
		t.Fatal(err)
	}
	// Revoking again must not free a second slot.
	if _, _, err := k.Revoke(ctx, list[3].ID); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, k, companyA, invoicing.Live, "invoices:read")
	if _, _, err := k.Create(ctx, NewKey{CompanyID: companyA, Mode: invoicing.Test, Scopes: scopes}); !errors.Is(err, ErrKeyLimit) {
		t.Fatalf("12th creation after one revocation = %v, want ErrKeyLimit", err)
	}
	if l, _ := k.List(ctx, companyA); len(l) != 11 {
		t.Errorf("List = %d keys, want 10 active + 1 revoked", len(l))
	}
}

// testReclaim simulates a crash after the count script: the id holds a slot
// with no record, is not listed, and is reclaimed once clearly abandoned.
func testReclaim(t *testing.T, rdb *redis.Client, prefix string) {
	c := newClock()
	k := newRing(t, rdb, prefix, c, func(cfg *Config) { cfg.MaxActiveKeys = 2 })
	mustCreate(t, k, companyA, invoicing.Live, "invoices:read")
	l := layout{p: prefix}
	if err := countScript.Run(ctx, rdb, l.counts(companyA), c.Now().UnixMilli(), 2, "key_orphanorphanorphan", c.Now().UnixMilli(), "+inf").Err(); err != nil {
		t.Fatal(err)
	}
	if list, _ := k.List(ctx, companyA); len(list) != 1 {
		t.Errorf("orphan listed: %+v", list)
	}
	scopes, _ := ParseScopes("invoices:read")
	// Young: it may be a creation in flight; it keeps its slot.
	if _, _, err := k.Create(ctx, NewKey{CompanyID: companyA, Mode: invoicing.Live, Scopes: scopes}); !errors.Is(err, ErrKeyLimit) {
		t.Fatalf("Create with a young orphan = %v, want ErrKeyLimit", err)
	}
	c.Add(2 * orphanGrace)
	if _, _, err := k.Create(ctx, NewKey{CompanyID: companyA, Mode: invoicing.Live, Scopes: scopes}); err != nil {
		t.Fatalf("Create after the orphan aged = %v", err)
	}
	if _, _, err := k.Create(ctx, NewKey{CompanyID: companyA, Mode: invoicing.Live, Scopes: scopes}); !errors.Is(err, ErrKeyLimit) {
		t.Fatalf("real keys are never reclaimed: %v", err)
	}
	if list, _ := k.List(ctx, companyA); len(list) != 2 {
		t.Errorf("List = %d keys, want 2", len(list))
	}
}

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
	<-b.pubsubReady
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
	if n := k.neg.len(); n > 64 {
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
