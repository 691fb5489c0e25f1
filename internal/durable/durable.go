// Package durable runs the Redis writes that must outlive the loss of
// the master: each on the master that owns its key, on one connection,
// followed by WAIT for as many replicas as the operator requires. Redis
// replicates asynchronously: a write the master has answered can still be
// lost if the master dies before a replica has it, and Sentinel or Cluster
// then promotes that replica. WAIT reports how many replicas have
// acknowledged the calling connection's writes, so the write and its WAIT
// must share a connection, which a pooled client does not promise.
package durable

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrNotAcknowledged: the master applied the write (its answer was read)
// but fewer replicas than required acknowledged it within the timeout, or
// the WAIT could not be asked. The write is in effect on the master; a
// failover before a replica receives it loses it.
var ErrNotAcknowledged = errors.New("durable: write not acknowledged by enough replicas")

// The problem code and title of every change that the required replicas
// did not confirm, whichever package made it: one code, so that the admin
// API, the console and the CLI tell an unconfirmed change by it alone.
const (
	ProblemCode  = "change_not_replicated"
	ProblemTitle = "Change not confirmed by Redis replicas"
)

// DefaultTimeout is Policy.Timeout's zero value.
const DefaultTimeout = time.Second

// Policy says how many replicas must acknowledge a write. The zero Policy
// writes as a plain client does and waits for nothing.
type Policy struct {
	// Replicas is how many replicas must acknowledge each write; zero
	// means none: no WAIT, and a failover may lose the last writes.
	Replicas int
	// Target, when not nil, is read at each write instead of Replicas:
	// a number shared by every component of a process and changed while
	// it runs (the binary raises it when it finds Redis replicated).
	Target *Target
	// Timeout bounds each WAIT; zero means DefaultTimeout.
	Timeout time.Duration
}

// Target is how many replicas must acknowledge each write, read at every
// write of every Policy that points to it. Safe for concurrent use.
type Target struct{ n atomic.Int64 }

// NewTarget returns a Target of n replicas.
func NewTarget(n int) *Target {
	t := &Target{}
	t.Set(n)
	return t
}

// Replicas is the number now.
func (t *Target) Replicas() int { return int(t.n.Load()) }

// Set makes every later write wait for n replicas (none when n <= 0).
func (t *Target) Set(n int) { t.n.Store(int64(max(n, 0))) }

// replicas is how many replicas a write waits for now.
func (p Policy) replicas() int {
	if p.Target != nil {
		return p.Target.Replicas()
	}
	return p.Replicas
}

// Write calls write with a client on which to make its writes, then waits
// for the policy's replicas. Every write of write must concern key's hash
// slot: on Redis Cluster, write is given a connection to the master that
// owns key (a redirection then fails the write instead of following it).
//
// A nil error means that Replicas replicas acknowledged everything the
// master had replicated up to write's last write, which includes every
// earlier write to that master, by anyone. write should therefore end with
// a command that changes something, even when there is nothing left to
// change (a repeated revocation sets the state it finds): Redis versions
// differ on the point WAIT waits for, some taking the connection's last
// command, others its last replicated one, and a command that changes
// nothing is not replicated; with those, the WAIT after a retry that
// changes nothing would not vouch for the first attempt's write.
//
// write's own error is returned as is: nothing is waited for. An error
// wrapping ErrNotAcknowledged means write succeeded on the master without
// enough acknowledgements; callers decide whether to undo the change or to
// report it as in effect but not durable.
func (p Policy) Write(ctx context.Context, rdb redis.UniversalClient, key string, write func(c redis.Cmdable) error) error {
	want := p.replicas()
	if want <= 0 {
		return write(rdb)
	}
	node, err := masterOf(ctx, rdb, key)
	if err != nil {
		return err
	}
	// One connection for the write and its WAIT. A broken connection is
	// not replaced under the Conn: the WAIT fails rather than asking on
	// another connection, which would vouch for nothing.
	conn := node.Conn()
	defer conn.Close()
	if err := write(conn); err != nil {
		return err
	}
	timeout := p.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	n, err := conn.Wait(ctx, want, timeout).Result()
	switch {
	case err != nil:
		return fmt.Errorf("%w: WAIT failed: %w", ErrNotAcknowledged, err)
	case n < int64(want):
		return fmt.Errorf("%w: %d of %d replicas acknowledged within %v", ErrNotAcknowledged, n, want, timeout)
	}
	return nil
}

// masterOf is the client of the master that owns key: the client itself
// for one server or Sentinel (go-redis's failover client talks to the
// current master only), the owning node's for Cluster.
func masterOf(ctx context.Context, rdb redis.UniversalClient, key string) (*redis.Client, error) {
	switch c := rdb.(type) {
	case *redis.Client:
		return c, nil
	case *redis.ClusterClient:
		node, err := c.MasterForKey(ctx, key)
		if err != nil {
			return nil, fmt.Errorf("durable: the master of the key's slot: %w", err)
		}
		return node, nil
	}
	return nil, fmt.Errorf("durable: cannot wait for replicas through a %T: use one server, Sentinel or Cluster", rdb)
}
