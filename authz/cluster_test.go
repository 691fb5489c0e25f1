package authz

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
)

// TestKeyringOnRedisCluster runs the Keyring's multi-key steps (the limit
// script over a company's two keys, revoke, list's pipelines, last-used
// pipelines, pub/sub) on a real three-master Redis Cluster, where a script
// whose keys span slots fails with CROSSSLOT: it proves the {company} hash
// tags keep each multi-key step in one slot.
func TestKeyringOnRedisCluster(t *testing.T) {
	t.Parallel()
	rdb := testenv.RedisClusterClient(t)

	// The check has teeth: this cluster refuses a cross-slot script.
	if err := rdb.Eval(ctx, "return redis.call('GET', KEYS[1])", []string{"a", "b"}).Err(); err == nil || !strings.Contains(err.Error(), "CROSSSLOT") {
		t.Fatalf("a script over two slots = %v, want CROSSSLOT: the test would prove nothing", err)
	}

	const prefix = "gw:authz:"
	c := newClock()
	k1 := newRing(t, rdb, prefix, c, func(cfg *Config) { cfg.NoPubSub = false })
	k2 := newRing(t, rdb, prefix, c, func(cfg *Config) { cfg.NoPubSub = false })
	<-k2.v.pubsubReady

	secrets := clusterCreateToLimit(t, k1, k2)
	victim := clusterVerifyAndRevoke(t, k1, k2, secrets)
	clusterRollAtLimit(t, c, k1, k2, secrets, victim)
	clusterExpiringKeys(t, c, k1, k2)
	clusterSpreadOverMasters(t, rdb, k1)
}

// clusterMaxKeys is the default MaxActiveKeys.
const clusterMaxKeys = 10

// clusterCreateToLimit runs 30 concurrent creations on two instances:
// exactly the limit succeeds. It returns the created keys' secrets by id.
func clusterCreateToLimit(t *testing.T, k1, k2 *Keyring) map[string]string {
	t.Helper()
	scopes, _ := ParseScopes("invoices:read,clients:read")
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		secrets = map[string]string{}
		limited int
	)
	for i := 0; i < 30; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ring := k1
			if i%2 == 1 {
				ring = k2
			}
			key, secret, err := ring.Create(ctx, NewKey{CompanyID: companyA, Mode: invoicing.Live, Scopes: scopes, Name: fmt.Sprint("k", i)})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				secrets[key.ID] = secret
			case errors.Is(err, ErrKeyLimit):
				limited++
			default:
				t.Errorf("Create on the cluster: %v", err)
			}
		}()
	}
	wg.Wait()
	if len(secrets) != clusterMaxKeys || limited != 30-clusterMaxKeys {
		t.Fatalf("30 concurrent creations: %d created, %d refused; want %d and %d", len(secrets), limited, clusterMaxKeys, 30-clusterMaxKeys)
	}
	return secrets
}

// clusterVerifyAndRevoke verifies every secret on the other instance,
// lists them, revokes one key and checks the freed slot is free once. It
// returns the revoked key's id.
func clusterVerifyAndRevoke(t *testing.T, k1, k2 *Keyring, secrets map[string]string) string {
	t.Helper()
	// Every secret verifies on the other instance; a verified key is
	// touched (a pipeline of scripts over many slots).
	for id, secret := range secrets {
		key, err := k2.Verify(ctx, secret)
		if err != nil || key.ID != id {
			t.Fatalf("Verify on the other instance = %+v, %v", key, err)
		}
	}
	list, err := k1.List(ctx, companyA)
	if err != nil || len(list) != clusterMaxKeys {
		t.Fatalf("List = %d keys, %v; want %d", len(list), err, clusterMaxKeys)
	}
	var victim string
	for id := range secrets {
		victim = id
		break
	}
	testenv.Eventually(t, "last-used to be written through the cluster", func() error {
		g, err := k1.Get(ctx, victim)
		if err == nil && g.LastUsedAt == nil {
			err = errors.New("no last-used time")
		}
		return err
	})

	// Revoke on one instance; pub/sub tells the other at once (its clock
	// does not move, so its cache would otherwise keep the key).
	if _, _, err := k1.Revoke(ctx, victim); err != nil {
		t.Fatalf("Revoke: %v", err)
	}
	testenv.Eventually(t, "the revocation to reach the other instance", func() error {
		_, err := k2.Verify(ctx, secrets[victim])
		return wantErr(err, ErrInvalidKey)
	})
	// The slot is free again, once.
	mustCreate(t, k2, companyA, invoicing.Test, "clients:write")
	scopes, _ := ParseScopes("invoices:read,clients:read")
	if _, _, err := k1.Create(ctx, NewKey{CompanyID: companyA, Mode: invoicing.Live, Scopes: scopes}); !errors.Is(err, ErrKeyLimit) {
		t.Fatalf("creation past the limit after one revocation = %v, want ErrKeyLimit", err)
	}
	return victim
}

// clusterRollAtLimit rolls a key at the limit (the roll script over the
// company's four keys): its successor verifies on the other instance, the
// old key expires at the overlap's end there too, and a roll with no
// overlap reaches the other instance through pub/sub.
func clusterRollAtLimit(t *testing.T, c *testenv.Clock, k1, k2 *Keyring, secrets map[string]string, victim string) {
	t.Helper()
	var rolled string
	for id := range secrets {
		if id != victim {
			rolled = id
			break
		}
	}
	r, err := k1.Roll(ctx, rolled, time.Minute)
	if err != nil {
		t.Fatalf("Roll at the limit on the cluster: %v", err)
	}
	if key, err := k2.Verify(ctx, r.Secret); err != nil || key.Replaces != rolled {
		t.Fatalf("successor on the other instance = %+v, %v", key, err)
	}
	c.Add(time.Minute)
	if _, err := k2.Verify(ctx, secrets[rolled]); !errors.Is(err, ErrExpiredKey) {
		t.Fatalf("rolled key after its overlap = %v, want ErrExpiredKey", err)
	}
	// A roll with no overlap reaches the other instance through pub/sub:
	// its clock does not move, so its cache would otherwise keep the key.
	if _, err := k2.Verify(ctx, r.Secret); err != nil {
		t.Fatal(err)
	}
	if _, err := k1.Roll(ctx, r.New.ID, 0); err != nil {
		t.Fatalf("Roll with no overlap: %v", err)
	}
	testenv.Eventually(t, "the roll to reach the other instance", func() error {
		_, err := k2.Verify(ctx, r.Secret)
		return wantErr(err, ErrExpiredKey)
	})
}

// clusterExpiringKeys checks that an expiring key stops counting once
// expired (the scripts' pruning).
func clusterExpiringKeys(t *testing.T, c *testenv.Clock, k1, k2 *Keyring) {
	t.Helper()
	scopes, _ := ParseScopes("invoices:read,clients:read")
	expiring := "00000000-0000-4000-8000-00000000ffff"
	for range clusterMaxKeys {
		createWith(t, k1, NewKey{CompanyID: expiring, ExpiresAt: at(c.Now().Add(time.Second))})
	}
	if _, _, err := k1.Create(ctx, NewKey{CompanyID: expiring, Mode: invoicing.Live, Scopes: scopes}); !errors.Is(err, ErrKeyLimit) {
		t.Fatalf("past the limit = %v", err)
	}
	c.Add(time.Second)
	createWith(t, k2, NewKey{CompanyID: expiring})
}

// clusterSpreadOverMasters creates keys of many companies and checks they
// spread over the masters: this is a cluster at work, not one node
// answering everything.
func clusterSpreadOverMasters(t *testing.T, rdb *redis.ClusterClient, k1 *Keyring) {
	t.Helper()
	for i := 0; i < 12; i++ {
		mustCreate(t, k1, fmt.Sprintf("00000000-0000-4000-8000-%012d", i), invoicing.Live, "invoices:read")
	}
	var mu sync.Mutex
	used := 0
	err := rdb.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
		n, err := node.DBSize(ctx).Result()
		if n > 0 {
			mu.Lock()
			used++
			mu.Unlock()
		}
		return err
	})
	if err != nil || used < 2 {
		t.Errorf("keys on %d masters (%v); want them spread over at least 2", used, err)
	}
}
