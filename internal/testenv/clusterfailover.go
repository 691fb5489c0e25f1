package testenv

import (
	"context"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// CutReplica disconnects the replica of the master at addr and keeps it
// from connecting again (it now authenticates as a user the master does
// not have), as a replica partitioned away: the master goes on taking
// writes the replica will never have, and the cluster still lists the
// replica. It returns the replica's address.
func (c *ReplicatedCluster) CutReplica(master string) string {
	c.t.Helper()
	replica := c.ReplicaOf(master)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r := redis.NewClient(&redis.Options{Addr: replica})
	defer r.Close()
	for _, kv := range [][2]string{{"masteruser", "testenv-cut"}, {"masterauth", "testenv-cut"}} {
		if err := r.ConfigSet(ctx, kv[0], kv[1]).Err(); err != nil {
			c.t.Fatalf("CONFIG SET %s on %s: %v", kv[0], replica, err)
		}
	}
	m := redis.NewClient(&redis.Options{Addr: master})
	defer m.Close()
	for {
		// Killed until it is gone: a reconnection in flight when the
		// replica's settings changed may still have got through.
		_ = m.ClientKillByFilter(ctx, "TYPE", "replica").Err()
		info, err := m.Info(ctx, "replication").Result()
		if err == nil && strings.Contains(info, "connected_slaves:0\r\n") {
			return replica
		}
		if ctx.Err() != nil {
			c.t.Fatalf("the replica %s of %s stays connected: %v\n%s", replica, master, err, info)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Failover kills the master at addr (SIGKILL), with whatever its replica
// had not received, and promotes that replica at once (CLUSTER FAILOVER
// TAKEOVER: no agreement of the other masters is needed, nor a replica in
// sync). It waits until the replica is a master and every node alive
// reports cluster_state:ok.
func (c *ReplicatedCluster) Failover(master, replica string) {
	c.t.Helper()
	p, ok := c.procs[master]
	if !ok {
		c.t.Fatalf("no node %s", master)
	}
	_ = p.Kill()
	delete(c.procs, master)
	c.Addrs = slices.DeleteFunc(c.Addrs, func(a string) bool { return a == master })
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	r := redis.NewClient(&redis.Options{Addr: replica})
	defer r.Close()
	for {
		err := r.Do(ctx, "CLUSTER", "FAILOVER", "TAKEOVER").Err()
		role, _ := r.Do(ctx, "ROLE").Slice()
		if len(role) > 0 && role[0] == "master" {
			break
		}
		if ctx.Err() != nil {
			c.t.Fatalf("%s was never promoted: %v", replica, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	waitClusterOK(ctx, c.t, c.Addrs)
	// Every node alive must also have moved the slots to the replica, or a
	// client could be sent to the dead master after this returns.
	for _, addr := range c.Addrs {
		n := redis.NewClient(&redis.Options{Addr: addr})
		for !servesNoSlot(ctx, n, master) {
			if ctx.Err() != nil {
				_ = n.Close()
				c.t.Fatalf("node %s still gives %s slots", addr, master)
			}
			time.Sleep(100 * time.Millisecond)
		}
		_ = n.Close()
	}
}

// servesNoSlot reports whether node n's view of the cluster gives no slot
// to the node at addr as a master.
func servesNoSlot(ctx context.Context, n *redis.Client, addr string) bool {
	shards, err := n.ClusterShards(ctx).Result()
	if err != nil {
		return false
	}
	for _, s := range shards {
		for _, node := range s.Nodes {
			if node.Role == "master" && len(s.Slots) > 0 && net.JoinHostPort(node.IP, strconv.FormatInt(node.Port, 10)) == addr {
				return false
			}
		}
	}
	return true
}
