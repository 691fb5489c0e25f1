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
	test, testSecret := checkCreate(t, k, live, liveSecret)
	checkVerifyAndGet(t, k, liveSecret, live)
	checkVerifyAndGet(t, k, testSecret, test)
	checkAuthorize(t, k, liveSecret)

	// Another company's keys stay apart.
	other, _ := mustCreate(t, k, companyB, invoicing.Live, "invoices:read")
	checkList(t, k, test, live, other, liveSecret, testSecret)

	// Redis holds no secret, not even a long piece of one.
	assertNoSecretStored(t, rdb, prefix, liveSecret, testSecret)

	c.Add(time.Second)
	checkRevoke(t, k, c, live, liveSecret, testSecret)
	checkUnknownIDs(t, k)
	if err := k.Ping(ctx); err != nil {
		t.Errorf("Ping: %v", err)
	}
}

// checkCreate creates a TEST key for companyA spelt in upper case: its
// company is normalized, each secret's prefix shows its mode, and live (the
// LIVE key created before) is active with a valid id.
func checkCreate(t *testing.T, k *Keyring, live Key, liveSecret string) (Key, string) {
	t.Helper()
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
	return test, testSecret
}

// checkVerifyAndGet: secret verifies as want, and Get of its id gives it.
func checkVerifyAndGet(t *testing.T, k *Keyring, secret string, want Key) {
	t.Helper()
	got, err := k.Verify(ctx, secret)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if got.ID != want.ID || got.Mode != want.Mode || got.Scopes != want.Scopes ||
		got.CompanyID != companyA || got.Hint != want.Hint || !got.CreatedAt.Equal(want.CreatedAt) {
		t.Errorf("Verify = %+v, want %+v", got, want)
	}
	g, err := k.Get(ctx, want.ID)
	if err != nil || g.ID != want.ID || g.Name != want.Name || !g.CreatedAt.Equal(want.CreatedAt) {
		t.Errorf("Get = %+v, %v", g, err)
	}
}

// checkAuthorize: the verified key (companyA's, invoices and clients read)
// authorizes its own company and scopes only.
func checkAuthorize(t *testing.T, k *Keyring, secret string) {
	t.Helper()
	got, _ := k.Verify(ctx, secret)
	if err := got.Authorize(companyA, InvoicesRead); err != nil {
		t.Errorf("Authorize: %v", err)
	}
	if err := got.Authorize(companyB, InvoicesRead); !errors.Is(err, ErrWrongCompany) {
		t.Errorf("Authorize other company: %v", err)
	}
	if err := got.Authorize(companyA, ClientsWrite); !errors.Is(err, ErrMissingScope) {
		t.Errorf("Authorize missing scope: %v", err)
	}
}

// checkList: companyA lists its keys newest first and shows no part of a
// secret; companyB lists only other; an unknown company lists nothing.
func checkList(t *testing.T, k *Keyring, test, live, other Key, secrets ...string) {
	t.Helper()
	list, err := k.List(ctx, companyA)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].ID != test.ID || list[1].ID != live.ID {
		t.Fatalf("List = %+v, want newest first [test, live]", list)
	}
	for _, key := range list {
		for _, s := range secrets {
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
}

// checkRevoke revokes live: immediate on this instance, idempotent, listed
// still, and the company's other key keeps working.
func checkRevoke(t *testing.T, k *Keyring, c *testenv.Clock, live Key, liveSecret, otherSecret string) {
	t.Helper()
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
	if _, err := k.Verify(ctx, otherSecret); err != nil {
		t.Errorf("the other key must keep working: %v", err)
	}
}

// checkUnknownIDs: Get and Revoke of an id no key has, or no id at all,
// find nothing.
func checkUnknownIDs(t *testing.T, k *Keyring) {
	t.Helper()
	for _, id := range []string{"key_aaaaaaaaaaaaaaaaaaaa", "nonsense", ""} {
		if _, err := k.Get(ctx, id); !errors.Is(err, ErrNotFound) {
			t.Errorf("Get(%q) = %v", id, err)
		}
		if _, _, err := k.Revoke(ctx, id); !errors.Is(err, ErrNotFound) {
			t.Errorf("Revoke(%q) = %v", id, err)
		}
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
