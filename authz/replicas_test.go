package authz

import (
	"context"
	"crypto/sha256"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
)

// TestChangesSurviveFailover runs key changes on a real Redis master and
// replica under a Sentinel, holds the replica back at chosen moments, then
// fails over, losing whatever the master had not sent: every change
// reported done is found on the promoted master through a fresh Keyring,
// every change whose confirmation was missing was reported so (an in-effect
// revocation) or taken back (a creation, a roll). Without MinReplicas, a
// revocation reported done comes back after the failover: the fault the
// setting exists for.
func TestChangesSurviveFailover(t *testing.T) {
	t.Parallel()
	r := testenv.RedisReplicated(t)
	rdb := r.Client()
	f := &failover{
		t: t,
		r: r,
		// sure waits long enough for a replica that keeps up on a busy
		// machine; quick gives up soon on one that is held back for good.
		sure:    newRing(t, rdb, failoverPrefix, nil, func(c *Config) { c.MinReplicas, c.ReplicaTimeout = 1, 30*time.Second }),
		quick:   newRing(t, rdb, failoverPrefix, nil, quickReplicas),
		plain:   newRing(t, rdb, failoverPrefix, nil, nil),
		keys:    map[string]Key{},
		secrets: map[string]string{},
	}
	for _, name := range []string{"revoked", "revoked-after-lag", "unconfirmed-revoke", "plain-revoke", "created", "rolled", "unrolled"} {
		f.keys[name], f.secrets[name] = mustCreateNamed(t, f.sure, name)
	}

	rolled := f.inSync()
	f.lagEndsInTime()
	f.lateRecordTakenBack()
	f.heldBackForGood()
	r.Failover()
	f.afterFailover(rolled)
}

const failoverPrefix = "gw:authz:"

// patient makes a Keyring whose Verify waits for Redis as long as it takes:
// what it finds is checked, not how fast (a client's first calls after a
// failover, on a busy machine, outlasted the default 250 ms).
func patient(c *Config) { c.Timeout = time.Minute }

// quickReplicas makes a Keyring that waits for one replica, briefly.
func quickReplicas(c *Config) { c.MinReplicas, c.ReplicaTimeout = 1, 200*time.Millisecond }

// failover is TestChangesSurviveFailover's state: the replicated Redis,
// its Keyrings, and the keys it changes, by name.
type failover struct {
	t                  *testing.T
	r                  *testenv.ReplicatedRedis
	sure, quick, plain *Keyring
	keys               map[string]Key
	secrets            map[string]string
}

// names lists k's keys of company A by name.
func (f *failover) names(k *Keyring) map[string]Key {
	f.t.Helper()
	list, err := k.List(ctx, companyA)
	if err != nil {
		f.t.Fatal(err)
	}
	m := map[string]Key{}
	for _, key := range list {
		m[key.Name] = key
	}
	return m
}

// inSync revokes and rolls with no lag: both confirmed. It returns the roll.
func (f *failover) inSync() Rolled {
	t := f.t
	t.Helper()
	if _, _, err := f.sure.Revoke(ctx, f.keys["revoked"].ID); err != nil {
		t.Fatalf("revoke, replica in sync: %v", err)
	}
	rolled, err := f.sure.Roll(ctx, f.keys["rolled"].ID, time.Hour)
	if err != nil {
		t.Fatalf("roll, replica in sync: %v", err)
	}
	return rolled
}

// lagEndsInTime holds the replica back until a revocation is on the master,
// then lets it go while the revocation waits: confirmed.
func (f *failover) lagEndsInTime() {
	t := f.t
	t.Helper()
	f.r.Link.Pause()
	done := make(chan error, 1)
	go func() { _, _, err := f.sure.Revoke(ctx, f.keys["revoked-after-lag"].ID); done <- err }()
	testenv.Eventually(t, "the revocation on the master", func() error {
		k, err := f.plain.Get(ctx, f.keys["revoked-after-lag"].ID)
		if err != nil {
			return err
		}
		return testenv.Want(k.State, StateRevoked, "state")
	})
	f.r.Link.Resume()
	if err := <-done; err != nil {
		t.Fatalf("revoke, lag ended within the timeout: %v", err)
	}
}

// lateRecordTakenBack checks that a creation whose lag starts at its last
// write, the record, is taken back too.
func (f *failover) lateRecordTakenBack() {
	t := f.t
	t.Helper()
	lateRdb := f.r.Client()
	late := newRing(t, lateRdb, failoverPrefix, nil, quickReplicas)
	scopes, _ := ParseScopes("invoices:read")
	hold := holdBefore(lateRdb, f.r.Link, func(cmd redis.Cmder) bool { return strings.EqualFold(cmd.Name(), "hset") })
	if _, _, err := late.Create(ctx, NewKey{CompanyID: companyA, Mode: invoicing.Live, Scopes: scopes, Name: "unconfirmed-record"}); !errors.Is(err, ErrNotReplicated) {
		t.Fatalf("create, replica held back at the record = %v, want ErrNotReplicated", err)
	}
	if !hold() {
		t.Fatal("the creation wrote no record: the lag never started")
	}
	f.r.Link.Resume()
	// The record and its take-back flow on to the replica; the link is
	// paused again next, and whatever it still held then would be lost at
	// the failover, leaving the record without its take-back.
	f.r.Synced()
}

// heldBackForGood holds the replica back from here to the failover and
// makes changes that cannot be confirmed.
func (f *failover) heldBackForGood() {
	t := f.t
	t.Helper()
	f.r.Link.Pause()
	key, revoked, err := f.quick.Revoke(ctx, f.keys["unconfirmed-revoke"].ID)
	if !errors.Is(err, ErrRevocationNotReplicated) || !revoked || key.State != StateRevoked {
		t.Fatalf("revoke, replica held back = %v (revoked %v, state %q), want ErrRevocationNotReplicated with the revoked key", err, revoked, key.State)
	}
	if invoicing.KindOf(err) != invoicing.Unavailable || !strings.Contains(err.Error(), "revoke it again") {
		t.Errorf("unconfirmed revocation: kind %v, message %q", invoicing.KindOf(err), err)
	}
	if _, err := f.plain.Verify(ctx, f.secrets["unconfirmed-revoke"]); !errors.Is(err, ErrInvalidKey) {
		t.Errorf("an unconfirmed revocation is in effect on the master: Verify = %v", err)
	}
	// Revoking again, from another instance (another connection, whose
	// WAIT would vouch for nothing it has not written), changes nothing on
	// the master and is not confirmed either: its WAIT vouches for the
	// first revocation.
	retry := newRing(t, f.r.Client(), failoverPrefix, nil, quickReplicas)
	if _, revoked, err := retry.Revoke(ctx, f.keys["unconfirmed-revoke"].ID); !errors.Is(err, ErrRevocationNotReplicated) || revoked {
		t.Fatalf("revoke again, replica held back = %v (revoked %v), want ErrRevocationNotReplicated", err, revoked)
	}
	if _, _, err := f.plain.Revoke(ctx, f.keys["plain-revoke"].ID); err != nil {
		t.Fatalf("revoke without MinReplicas: %v", err)
	}
	// A creation and a roll whose first write is unconfirmed are taken back.
	scopes, _ := ParseScopes("invoices:read")
	if _, secret, err := f.quick.Create(ctx, NewKey{CompanyID: companyA, Mode: invoicing.Live, Scopes: scopes, Name: "unconfirmed-create"}); !errors.Is(err, ErrNotReplicated) || secret != "" {
		t.Fatalf("create, replica held back = %v (secret given: %v), want ErrNotReplicated", err, secret != "")
	}
	if _, err := f.quick.Roll(ctx, f.keys["unrolled"].ID, time.Hour); !errors.Is(err, ErrNotReplicated) {
		t.Fatalf("roll, replica held back = %v, want ErrNotReplicated", err)
	}
	now := f.names(f.plain)
	for _, name := range []string{"unconfirmed-create", "unconfirmed-record"} {
		if _, ok := now[name]; ok {
			t.Errorf("the unconfirmed creation %q was not taken back", name)
		}
	}
	if k := now["unrolled"]; k.ReplacedBy != "" || k.ExpiresAt != nil {
		t.Errorf("the unconfirmed roll was not taken back: %+v", k)
	}
}

// afterFailover checks, through fresh Keyrings on the promoted master,
// which changes survived.
func (f *failover) afterFailover(rolled Rolled) {
	t := f.t
	t.Helper()
	fresh := newRing(t, f.r.Client(), failoverPrefix, nil, patient)
	for name, want := range map[string]error{
		"revoked":            ErrInvalidKey, // confirmed
		"revoked-after-lag":  ErrInvalidKey, // confirmed once the lag ended
		"created":            nil,           // confirmed
		"rolled":             nil,           // in its overlap
		"unrolled":           nil,           // its roll taken back
		"plain-revoke":       nil,           // reported done without MinReplicas, lost
		"unconfirmed-revoke": nil,           // reported unconfirmed, lost
	} {
		if _, err := fresh.Verify(ctx, f.secrets[name]); !errors.Is(err, want) {
			t.Errorf("after the failover, key %q: Verify = %v, want %v", name, err, want)
		}
	}
	if k, err := fresh.Verify(ctx, rolled.Secret); err != nil || k.ID != rolled.New.ID {
		t.Errorf("after the failover, the confirmed roll's successor: %v", err)
	}
	after := f.names(fresh)
	if after["rolled"].ReplacedBy != rolled.New.ID {
		t.Errorf("after the failover, the rolled key is not replaced: %+v", after["rolled"])
	}
	for _, name := range []string{"unconfirmed-create", "unconfirmed-record"} {
		if _, ok := after[name]; ok {
			t.Errorf("after the failover, the taken-back creation %q is listed", name)
		}
	}
	// The promoted master has no replica: a revocation is in effect but
	// cannot be confirmed, and says so.
	again := newRing(t, f.r.Client(), failoverPrefix, nil, quickReplicas)
	if _, _, err := again.Revoke(ctx, f.keys["unconfirmed-revoke"].ID); !errors.Is(err, ErrRevocationNotReplicated) {
		t.Fatalf("revoke on a master without replicas = %v, want ErrRevocationNotReplicated", err)
	}
	if _, err := newRing(t, f.r.Client(), failoverPrefix, nil, patient).Verify(ctx, f.secrets["unconfirmed-revoke"]); !errors.Is(err, ErrInvalidKey) {
		t.Errorf("the unconfirmed revocation is not in effect: %v", err)
	}
}

func mustCreateNamed(t *testing.T, k *Keyring, name string) (Key, string) {
	t.Helper()
	scopes, _ := ParseScopes("invoices:read")
	key, secret, err := k.Create(ctx, NewKey{CompanyID: companyA, Mode: invoicing.Live, Scopes: scopes, Name: name})
	if err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
	return key, secret
}

// holdBefore pauses link just before the first command of rdb that pick
// chooses is sent; the returned func reports whether it did.
func holdBefore(rdb *redis.Client, link *testenv.FaultProxy, pick func(redis.Cmder) bool) func() bool {
	h := &holdHook{link: link, pick: pick}
	rdb.AddHook(h)
	return func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		return h.held
	}
}

type holdHook struct {
	link *testenv.FaultProxy
	pick func(redis.Cmder) bool
	mu   sync.Mutex
	held bool
}

func (h *holdHook) hold(cmd redis.Cmder) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.held && h.pick(cmd) {
		h.held = true
		h.link.Pause()
	}
}

func (h *holdHook) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) { return next(ctx, network, addr) }
}

func (h *holdHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.hold(cmd)
		return next(ctx, cmd)
	}
}

func (h *holdHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			h.hold(c)
		}
		return next(ctx, cmds)
	}
}

// TestKeyringWaitsOnRedisCluster: on a Redis Cluster with a replica per
// master, every change waits on the master of each key it writes (their
// slots differ: the count's, the id index's, the record's). All succeed
// with the replicas running; with the replica of a record's master
// stopped, that key's revocation is in effect but unconfirmed, while
// another key's, on another master, is confirmed.
func TestKeyringWaitsOnRedisCluster(t *testing.T) {
	t.Parallel()
	c := testenv.RedisClusterReplicated(t)
	rdb := c.Client()
	const prefix = "gw:authz:"
	sure := newRing(t, rdb, prefix, nil, func(c *Config) { c.MinReplicas, c.ReplicaTimeout = 1, 30*time.Second })
	quick := newRing(t, rdb, prefix, nil, func(c *Config) { c.MinReplicas, c.ReplicaTimeout = 1, 300*time.Millisecond })

	// masterOf is the master that holds a secret's record.
	masterOf := func(secret string) string {
		t.Helper()
		d := sha256.Sum256([]byte(secret))
		node, err := rdb.MasterForKey(ctx, sure.l.recordOf(&d))
		if err != nil {
			t.Fatal(err)
		}
		return node.Options().Addr
	}

	other, _ := mustCreateNamed(t, sure, "other")
	rolled, err := sure.Roll(ctx, other.ID, time.Hour)
	if err != nil {
		t.Fatalf("roll on the cluster: %v", err)
	}
	if _, err := sure.Verify(ctx, rolled.Secret); err != nil {
		t.Fatalf("the roll's successor: %v", err)
	}
	// The revocation that must be confirmed is the successor's: its record
	// must live on another master than the one whose replica stops. Keys
	// until one does; the others are revoked to stay below the limit.
	confirmedMaster := masterOf(rolled.Secret)
	var held Key
	var heldMaster string
	for i := 0; heldMaster == "" && i < 50; i++ {
		key, secret := mustCreateNamed(t, sure, "k")
		if addr := masterOf(secret); addr != confirmedMaster {
			held, heldMaster = key, addr
		} else if _, _, err := sure.Revoke(ctx, key.ID); err != nil {
			t.Fatalf("revoke on the cluster: %v", err)
		}
	}
	if heldMaster == "" {
		t.Fatal("every record landed on one master")
	}

	replica := c.ReplicaOf(heldMaster)
	c.Stop(replica)
	_, _, heldErr := quick.Revoke(ctx, held.ID)
	_, _, otherErr := sure.Revoke(ctx, rolled.New.ID)
	c.Continue(replica)
	if !errors.Is(heldErr, ErrRevocationNotReplicated) {
		t.Errorf("revoke with the record's replica stopped = %v, want ErrRevocationNotReplicated", heldErr)
	}
	if otherErr != nil {
		t.Errorf("revoke of a key on another master = %v", otherErr)
	}
}
