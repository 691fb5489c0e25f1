package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/invoicing-ao/gateway/internal/testenv"
)

// TestClusterFailoverOnShippedDefaults is a Redis Cluster's failover on the
// shipped configuration (redisMinReplicas auto finds the cluster
// replicated): two `gateway serve` processes and the command line, three
// masters with a replica each. Changes made with every replica in sync are
// answered done; then the replicas of the masters that hold the company's
// keys and limits and the webhook endpoints are cut off, and the same
// changes are refused as unconfirmed; those masters die with what their
// replicas never had, and the replicas take over. Every change answered
// done is in effect on every instance; the refused revocation was lost,
// never answered ok and then active.
func TestClusterFailoverOnShippedDefaults(t *testing.T) {
	t.Parallel()
	c := testenv.RedisClusterReplicated(t)
	url := "redis+cluster://" + c.Addrs[0] + "?addr=" + strings.Join(c.Addrs[1:], "&addr=")
	r := newRig(t, url)
	procs := []*process{r.serve(), r.serve()}

	revoked, created, lagRevoked := r.key("revoked in sync"), r.key("created in sync"), r.key("revoked while cut off")
	updated, lagDeleted := r.lendpoint("updated"), r.lendpoint("deleted while cut off")
	r.sure("keys", "revoke", revoked.ID)
	r.sure("limits", "set", "--company", r.co, "--mode", "LIVE", "--rps", "7", "--burst", "9")
	r.sure("webhooks", "update", updated.ID, "--description", "changed in sync")
	eps := r.endpoints()

	cc := c.Client()
	var masters []string
	// The masters the changes below write to: the company's (its keys'
	// counts, its limits, its audit log), the endpoints', and the one of
	// the revoked key's record.
	digest := sha256.Sum256([]byte(lagRevoked.Key))
	for _, k := range []string{"tenants:{" + r.co + "}:limits", "events:{events}:ver", "authz:key:" + hex.EncodeToString(digest[:])} {
		n, err := cc.MasterForKey(context.Background(), k)
		if err != nil {
			t.Fatal(err)
		}
		if addr := n.Options().Addr; !slices.Contains(masters, addr) {
			masters = append(masters, addr)
		}
	}
	var replicas []string
	for _, m := range masters {
		replicas = append(replicas, c.CutReplica(m))
	}
	for _, args := range [][]string{
		{"keys", "revoke", lagRevoked.ID},
		{"keys", "create", "--company", r.co, "--mode", "LIVE", "--scopes", "clients:read", "--name", "created while cut off"},
		{"limits", "set", "--company", r.co, "--mode", "TEST", "--rps", "5", "--burst", "6"},
		{"webhooks", "delete", lagDeleted.ID},
		{"webhooks", "create", "--company", r.co, "--mode", "LIVE", "--url", "http://127.0.0.1:9/created-while-cut-off"},
	} {
		r.refused(args...)
	}
	for i, m := range masters {
		c.Failover(m, replicas[i])
	}

	procs = append(procs, r.serve())
	for i, p := range procs {
		if got := r.answer(p, revoked.Key); got != http.StatusUnauthorized {
			t.Errorf("instance %d: the key revoked in sync answered %d after the failover, want 401", i+1, got)
		}
		r.becomes(p, created.Key, http.StatusOK, "the key created in sync")
		r.policyBecomes(p, created.Key, `"live";q=9;w=2`)
	}
	if got := r.limit(); got != "7/9" {
		t.Errorf("the LIVE limit set in sync, after the failover: %s", got)
	}
	if got := r.endpoints()[updated.ID]; got != eps[updated.ID] {
		t.Errorf("the endpoint changed in sync, after the failover: %q, want %q", got, eps[updated.ID])
	}
	if got := r.keyStates()[lagRevoked.ID]; got != "active" {
		t.Errorf("the revocation refused while the replica was cut off is %q after the failover: the test lost nothing", got)
	}
	// The promoted masters have no replica. While another master has one,
	// the cluster is replicated (redisMinReplicas auto) and their changes
	// are refused until a replica is back; when every master was failed
	// over, none has a replica, so none can be promoted again either, and
	// a change is done once its master has it.
	if len(masters) < 3 {
		r.refused("keys", "revoke", lagRevoked.ID)
	} else {
		r.ok("keys", "revoke", lagRevoked.ID)
	}
}
