package durable_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/invoicing-ao/gateway/internal/durable"
	"github.com/invoicing-ao/gateway/internal/testenv"
)

// set is a write of key to v.
func set(ctx context.Context, key, v string) func(redis.Cmdable) error {
	return func(c redis.Cmdable) error { return c.Set(ctx, key, v, 0).Err() }
}

// TestWaitsForTheReplica runs writes on a real master and replica whose
// link the test holds back: a write is confirmed only once the replica has
// it, is reported unconfirmed while the replica lags (a retry too: it
// vouches for the first attempt), is confirmed when the lag ends within the
// timeout, and a failover keeps what was confirmed and loses what was not.
func TestWaitsForTheReplica(t *testing.T) {
	t.Parallel()
	r := testenv.RedisReplicated(t)
	rdb := r.Client()
	replica := r.Direct(r.Replica)
	ctx := context.Background()
	confirm := durable.Policy{Replicas: 1, Timeout: 30 * time.Second}
	quick := durable.Policy{Replicas: 1, Timeout: 200 * time.Millisecond}

	if err := confirm.Write(ctx, rdb, "a", set(ctx, "a", "1")); err != nil {
		t.Fatalf("write with the replica in sync: %v", err)
	}
	if v, err := replica.Get(ctx, "a").Result(); err != nil || v != "1" {
		t.Fatalf("confirmed write, replica has a = %q, %v", v, err)
	}

	r.Link.Pause()
	err := quick.Write(ctx, rdb, "b", set(ctx, "b", "1"))
	if !errors.Is(err, durable.ErrNotAcknowledged) {
		t.Fatalf("write while the replica lags = %v, want ErrNotAcknowledged", err)
	}
	if v, err := rdb.Get(ctx, "b").Result(); err != nil || v != "1" {
		t.Fatalf("unconfirmed write not on the master: %q, %v", v, err)
	}
	// The same write again, from another client (another connection,
	// whose WAIT would vouch for nothing it has not written), changes
	// nothing on the master but is replicated all the same, so its WAIT
	// covers the first attempt: still unconfirmed.
	if err := quick.Write(ctx, r.Client(), "b", set(ctx, "b", "1")); !errors.Is(err, durable.ErrNotAcknowledged) {
		t.Fatalf("retry while the replica lags = %v, want ErrNotAcknowledged", err)
	}
	// Without a policy nothing is waited for, as before.
	if err := (durable.Policy{}).Write(ctx, rdb, "c", set(ctx, "c", "1")); err != nil {
		t.Fatalf("write without a policy: %v", err)
	}

	// A lag that ends while the WAIT waits: confirmed.
	done := make(chan error, 1)
	go func() { done <- confirm.Write(ctx, rdb, "d", set(ctx, "d", "1")) }()
	testenv.Eventually(t, "the write to reach the master", func() error {
		return testenv.Want(rdb.Get(ctx, "d").Val(), "1", "d")
	})
	r.Link.Resume()
	if err := <-done; err != nil {
		t.Fatalf("write confirmed after the lag ended: %v", err)
	}
	if v := replica.MGet(ctx, "b", "c", "d").Val(); v[0] != "1" || v[1] != "1" || v[2] != "1" {
		t.Fatalf("after the lag the replica has b, c, d = %v", v)
	}

	// A failover keeps the confirmed writes and loses what the master
	// had not sent: the harness loses writes as a real failover does.
	r.Link.Pause()
	if err := quick.Write(ctx, rdb, "e", set(ctx, "e", "1")); !errors.Is(err, durable.ErrNotAcknowledged) {
		t.Fatalf("write while the replica lags = %v, want ErrNotAcknowledged", err)
	}
	r.Failover()
	after := r.Client()
	if v := after.MGet(ctx, "a", "d", "e").Val(); v[0] != "1" || v[1] != "1" || v[2] != nil {
		t.Fatalf("after the failover a, d, e = %v, want 1, 1 and nothing", v)
	}
	// The promoted master has no replica: nothing can be confirmed.
	if err := quick.Write(ctx, after, "f", set(ctx, "f", "1")); !errors.Is(err, durable.ErrNotAcknowledged) {
		t.Fatalf("write on a master without replicas = %v, want ErrNotAcknowledged", err)
	}
}

// TestWaitOnClusterGoesToTheKeysMaster: on Redis Cluster the WAIT is asked
// of the master that owns the key, on the write's connection. A stopped
// replica of another master changes nothing; a stopped replica of the
// key's master makes the write unconfirmed. A WAIT sent to any other node
// would vouch for nothing and pass.
func TestWaitOnClusterGoesToTheKeysMaster(t *testing.T) {
	t.Parallel()
	c := testenv.RedisClusterReplicated(t)
	rdb := c.Client()
	ctx := context.Background()
	const key = "gw:{company}:x"
	node, err := rdb.MasterForKey(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	own := node.Options().Addr
	var other string
	for _, addr := range c.Addrs {
		n := redis.NewClient(&redis.Options{Addr: addr})
		role, err := n.Do(ctx, "ROLE").Slice()
		_ = n.Close()
		if err == nil && role[0] == "master" && addr != own {
			other = addr
		}
	}
	if other == "" {
		t.Fatal("no other master")
	}
	quick := durable.Policy{Replicas: 1, Timeout: 300 * time.Millisecond}
	confirm := durable.Policy{Replicas: 1, Timeout: 30 * time.Second}

	otherReplica := c.ReplicaOf(other)
	c.Stop(otherReplica)
	err = confirm.Write(ctx, rdb, key, set(ctx, key, "1"))
	c.Continue(otherReplica)
	if err != nil {
		t.Fatalf("write with the key's replica running: %v", err)
	}

	ownReplica := c.ReplicaOf(own)
	c.Stop(ownReplica)
	err = quick.Write(ctx, rdb, key, set(ctx, key, "2"))
	c.Continue(ownReplica)
	if !errors.Is(err, durable.ErrNotAcknowledged) {
		t.Fatalf("write with the key's replica stopped = %v, want ErrNotAcknowledged", err)
	}
}

// TestOtherClientsRefused: a client that cannot name the key's master is
// refused rather than trusted with a WAIT that may vouch for nothing.
func TestOtherClientsRefused(t *testing.T) {
	t.Parallel()
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": "127.0.0.1:1"}})
	defer ring.Close()
	called := false
	err := durable.Policy{Replicas: 1}.Write(context.Background(), ring, "k", func(redis.Cmdable) error { called = true; return nil })
	if err == nil || called {
		t.Fatalf("write through a Ring = %v (write called: %v), want a refusal before writing", err, called)
	}
}

// TestTargetReadAtEachWrite: a Policy with a Target waits for the number
// the Target holds at the time of each write, so that one change of it
// reaches every component sharing it. The tests' Redis has no replica: a
// write waiting for one is unconfirmed.
func TestTargetReadAtEachWrite(t *testing.T) {
	t.Parallel()
	rdb, prefix := testenv.Redis(t)
	ctx := context.Background()
	target := durable.NewTarget(0)
	p := durable.Policy{Replicas: 5, Target: target, Timeout: 50 * time.Millisecond}
	if err := p.Write(ctx, rdb, prefix+"t", set(ctx, prefix+"t", "1")); err != nil {
		t.Fatalf("target 0 (Replicas 5 ignored): %v", err)
	}
	target.Set(1)
	if err := p.Write(ctx, rdb, prefix+"t", set(ctx, prefix+"t", "2")); !errors.Is(err, durable.ErrNotAcknowledged) {
		t.Fatalf("target raised to 1 on a master without replicas = %v, want ErrNotAcknowledged", err)
	}
	if v := rdb.Get(ctx, prefix+"t").Val(); v != "2" {
		t.Errorf("the unconfirmed write is not on the master: %q", v)
	}
	target.Set(-3)
	if got := target.Replicas(); got != 0 {
		t.Errorf("a negative target reads %d, want 0", got)
	}
}
