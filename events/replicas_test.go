package events

import (
	"context"
	"encoding/json"
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/invoicing-ao/gateway/internal/seal"
	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
)

// TestEndpointChangesConfirmedByReplicas manages endpoints on a real Redis
// master and replica under a Sentinel, the replica's link held back by the
// test. With MinReplicas 1, a creation or a rotation the replica does not
// confirm is taken back (no secret); a change or a deletion stays in effect
// and is reported unconfirmed; repeating each is safe and, once the replica
// is back, confirms it. A failover then keeps what was confirmed and loses
// what was reported unconfirmed.
func TestEndpointChangesConfirmedByReplicas(t *testing.T) {
	t.Parallel()
	r := testenv.RedisReplicated(t)
	ctx := context.Background()
	service := func(rdb redis.UniversalClient, timeout time.Duration) *Service {
		s, err := New(Config{Redis: rdb, Prefix: "rep:", AllowHTTP: true, AllowedNetworks: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
			MinReplicas: 1, ReplicaTimeout: timeout})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	sure, quick := service(r.Client(), 30*time.Second), service(r.Client(), 200*time.Millisecond)
	create := func(s *Service, desc string) (Webhook, string, error) {
		return s.CreateWebhook(ctx, NewWebhook{CompanyID: testCompany, Mode: invoicing.Live, URL: "http://127.0.0.1:9/" + desc, Description: desc})
	}
	eps := map[string]Webhook{}
	for _, name := range []string{"changed", "deleted", "rotated", "kept"} {
		e, _, err := create(sure, name)
		if err != nil {
			t.Fatalf("create %s, replica in sync: %v", name, err)
		}
		eps[name] = e
	}
	rotated := eps["rotated"]
	rotatedSecret := rotated.current()

	r.Link.Pause()
	if e, secret, err := create(quick, "unconfirmed"); !errors.Is(err, ErrNotReplicatedTakenBack) || secret != "" || e.ID != "" {
		t.Fatalf("create, replica held back = %+v, secret given %v, %v; want ErrNotReplicatedTakenBack", e, secret != "", err)
	}
	if _, secret, err := quick.RotateSecret(ctx, eps["rotated"].ID, time.Hour); !errors.Is(err, ErrNotReplicatedTakenBack) || secret != "" {
		t.Fatalf("rotate, replica held back = secret given %v, %v; want ErrNotReplicatedTakenBack", secret != "", err)
	}
	desc := "changed while held back"
	for i := range 2 { // the change, then its repetition: both unconfirmed
		if e, err := quick.UpdateWebhook(ctx, eps["changed"].ID, Patch{Description: &desc}); !errors.Is(err, ErrNotReplicated) || e.Description != desc {
			t.Fatalf("update #%d, replica held back = %+v, %v; want ErrNotReplicated with the endpoint changed", i+1, e, err)
		}
	}
	if e, deleted, err := quick.DeleteWebhook(ctx, eps["deleted"].ID); !errors.Is(err, ErrNotReplicated) || !deleted || e.ID != eps["deleted"].ID {
		t.Fatalf("delete, replica held back = %+v, %v, %v; want ErrNotReplicated, deleted", e, deleted, err)
	}
	if e, deleted, err := quick.DeleteWebhook(ctx, eps["deleted"].ID); !errors.Is(err, ErrNotReplicated) || deleted || e.ID != eps["deleted"].ID {
		t.Fatalf("delete again, replica held back = %+v, %v, %v; want ErrNotReplicated, not deleted again", e, deleted, err)
	}
	if invoicing.KindOf(ErrNotReplicated) != invoicing.Unavailable || invoicing.KindOf(ErrNotReplicatedTakenBack) != invoicing.Unavailable {
		t.Error("the unconfirmed changes' errors are not of the unavailable kind")
	}
	// What the master holds now: the creation and the rotation taken
	// back, the change and the deletion in effect.
	got, err := quick.ListWebhooks(ctx, testCompany)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]Webhook{}
	for _, e := range got {
		names[e.Description] = e
	}
	if _, ok := names["unconfirmed"]; ok || len(got) != 3 {
		t.Errorf("endpoints on the master: %+v; want changed, rotated and kept only", got)
	}
	if e := names["rotated"]; e.current() != rotatedSecret || e.PreviousSecretUntil != nil {
		t.Errorf("the rotation was not taken back: %+v", e)
	}

	// The link back: repeating the held-back changes confirms them.
	r.Link.Resume()
	if _, err := quick.UpdateWebhook(ctx, eps["changed"].ID, Patch{Description: &desc}); err != nil {
		t.Fatalf("update again, replica back: %v", err)
	}
	if _, deleted, err := quick.DeleteWebhook(ctx, eps["deleted"].ID); err != nil || deleted {
		t.Fatalf("delete again, replica back = %v, %v; want confirmed, not deleted again", deleted, err)
	}
	failoverLosesTheUnconfirmed(t, r, quick, service, eps, desc)
}

// failoverLosesTheUnconfirmed holds the replica back again: a change and a
// deletion are reported unconfirmed, then a failover loses what the master
// had not sent, and keeps what was confirmed (desc, and the deletion of
// eps["deleted"]).
func failoverLosesTheUnconfirmed(t *testing.T, r *testenv.ReplicatedRedis, quick *Service, service func(redis.UniversalClient, time.Duration) *Service,
	eps map[string]Webhook, desc string) {
	t.Helper()
	ctx := context.Background()
	r.Link.Pause()
	lost := "lost in the failover"
	if _, err := quick.UpdateWebhook(ctx, eps["kept"].ID, Patch{Description: &lost}); !errors.Is(err, ErrNotReplicated) {
		t.Fatalf("update of kept, replica held back = %v", err)
	}
	if _, _, err := quick.DeleteWebhook(ctx, eps["rotated"].ID); !errors.Is(err, ErrNotReplicated) {
		t.Fatalf("delete of rotated, replica held back = %v", err)
	}
	r.Failover()
	after := service(r.Client(), 200*time.Millisecond)
	if e, err := after.Webhook(ctx, eps["changed"].ID); err != nil || e.Description != desc {
		t.Errorf("after the failover, the confirmed change: %+v, %v", e, err)
	}
	if _, err := after.Webhook(ctx, eps["deleted"].ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("after the failover, the confirmed deletion: %v", err)
	}
	// Reported unconfirmed, and lost: the answers were right not to say
	// they were done.
	if e, err := after.Webhook(ctx, eps["kept"].ID); err != nil || e.Description != "kept" {
		t.Errorf("after the failover, the unconfirmed change: %+v, %v; want the description before it", e, err)
	}
	if _, err := after.Webhook(ctx, eps["rotated"].ID); err != nil {
		t.Errorf("after the failover, the unconfirmed deletion: %v; want the endpoint back", err)
	}
}

// Secrets sealed again (Reseal) wait for the replicas as endpoint changes
// do: with the replica held back, Reseal seals on the master and reports
// it unconfirmed, and so does a second run with nothing left to seal; with
// the replica back, a run confirms both, and a failover keeps the secret
// sealed.
func TestResealConfirmedByReplicas(t *testing.T) {
	t.Parallel()
	r := testenv.RedisReplicated(t)
	ctx := context.Background()
	service := func(rdb redis.UniversalClient, secrets Sealer, timeout time.Duration) *Service {
		s, err := New(Config{Redis: rdb, Prefix: "rep:", AllowHTTP: true, AllowedNetworks: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
			Secrets: secrets, MinReplicas: 1, ReplicaTimeout: timeout})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	plain := service(r.Client(), nil, 30*time.Second)
	ep, _, err := plain.CreateWebhook(ctx, NewWebhook{CompanyID: testCompany, Mode: invoicing.Live, URL: "http://127.0.0.1:9/x"})
	if err != nil {
		t.Fatal(err)
	}
	ring := keyring(t, newSealKey(t))
	sealedOn := func(rdb redis.UniversalClient) bool {
		t.Helper()
		var c config
		if err := json.Unmarshal([]byte(rdb.HGet(ctx, plain.l.endpoint(ep.ID), "cfg").Val()), &c); err != nil || len(c.Secrets) != 1 {
			t.Fatalf("the endpoint's record: %v", err)
		}
		return seal.Sealed(c.Secrets[0].Secret)
	}

	r.Link.Pause()
	quick := service(r.Client(), ring, 200*time.Millisecond)
	if res, err := quick.Reseal(ctx); !errors.Is(err, ErrResealNotReplicated) || res.Resealed != 1 {
		t.Fatalf("reseal, replica held back = %+v, %v; want 1 resealed, ErrResealNotReplicated", res, err)
	}
	if !sealedOn(r.Client()) {
		t.Fatal("the master does not hold the secret sealed")
	}
	if res, err := quick.Reseal(ctx); !errors.Is(err, ErrResealNotReplicated) || res.Resealed != 0 {
		t.Fatalf("reseal again, replica held back = %+v, %v; want nothing resealed, still unconfirmed", res, err)
	}
	if invoicing.KindOf(ErrResealNotReplicated) != invoicing.Unavailable {
		t.Error("ErrResealNotReplicated is not of the unavailable kind")
	}

	r.Link.Resume()
	if res, err := service(r.Client(), ring, 30*time.Second).Reseal(ctx); err != nil || res.Resealed != 0 {
		t.Fatalf("reseal again, replica back = %+v, %v; want confirmed", res, err)
	}
	r.Failover()
	if !sealedOn(r.Client()) {
		t.Error("after the failover, the secret is no longer sealed")
	}
}
