package tenants

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
)

// TestLimiterOnRedisCluster runs the limiter on a real three-master Redis
// Cluster: the GCRA script reads the company's override hash and writes its
// TAT in one step, which Cluster allows only because both keys carry the
// {company} hash tag. A decision that fell back to local memory would hide a
// CROSSSLOT refusal, so every decision here must come from Redis.
func TestLimiterOnRedisCluster(t *testing.T) {
	t.Parallel()
	rdb := testenv.RedisClusterClient(t)
	ctx := context.Background()
	if err := rdb.Eval(ctx, "return 1", []string{"a", "b"}).Err(); err == nil || !strings.Contains(err.Error(), "CROSSSLOT") {
		t.Fatalf("a script over two slots = %v, want CROSSSLOT: the test would prove nothing", err)
	}
	const prefix = "gw:tenants:"
	l1 := newLimiter(Config{Redis: rdb, Prefix: prefix, Logger: discard(), LiveDefault: Limit{Rate: 0.01, Burst: 5}})
	l2 := newLimiter(Config{Redis: rdb, Prefix: prefix, Logger: discard(), LiveDefault: Limit{Rate: 0.01, Burst: 5}})

	// Two instances share one budget of 5 per company.
	for _, company := range []string{"acme", "globex", "initech"} {
		n := 0
		for i := 0; i < 10; i++ {
			l := l1
			if i%2 == 1 {
				l = l2
			}
			if allowedByRedis(t, l, company, invoicing.Live) {
				n++
			}
		}
		if n != 5 {
			t.Errorf("%s: %d of 10 admitted by two instances, want the burst of 5", company, n)
		}
	}

	clusterOverrides(t, l1, l2)
	clusterSharedRound(t, l1)
	clusterLeasedLimit(t, rdb, prefix, l1, l2)
}

// allowedByRedis is l's decision for company in mode, which must come from
// Redis: a local one would hide a CROSSSLOT refusal.
func allowedByRedis(t *testing.T, l *Limiter, company string, mode invoicing.Mode) bool {
	t.Helper()
	d, err := l.Allow(context.Background(), company, mode)
	if err != nil {
		t.Fatal(err)
	}
	if d.Local {
		t.Fatalf("decision made locally: Redis Cluster refused the script")
	}
	return d.Allowed
}

// clusterOverrides checks that an override set through one instance is
// what the other applies next, read one company or many at a time, and
// reset.
func clusterOverrides(t *testing.T, l1, l2 *Limiter) {
	t.Helper()
	ctx := context.Background()
	if err := l1.SetLimit(ctx, "acme", invoicing.Test, Limit{Rate: 0.01, Burst: 2}); err != nil {
		t.Fatalf("SetLimit: %v", err)
	}
	got, err := l2.Limits(ctx, "acme")
	if err != nil || got.Test != (Limit{Rate: 0.01, Burst: 2}) || !got.TestCustom {
		t.Fatalf("Limits after SetLimit = %+v, %v", got, err)
	}
	pattern := ""
	for i := 0; i < 4; i++ {
		pattern += fmt.Sprint(allowedByRedis(t, l2, "acme", invoicing.Test), " ")
	}
	if pattern != "true true false false " {
		t.Errorf("TEST decisions under burst 2: %s", pattern)
	}
	if many, err := l2.LimitsOf(ctx, []string{"globex", "acme", "initech"}); err != nil || len(many) != 3 || many[1].Test != (Limit{Rate: 0.01, Burst: 2}) || many[0].TestCustom || many[2].TestCustom {
		t.Fatalf("LimitsOf across slots = %+v, %v", many, err)
	}
	if err := l2.ResetLimits(ctx, "acme"); err != nil {
		t.Fatalf("ResetLimits: %v", err)
	}
	if got, err := l1.Limits(ctx, "acme"); err != nil || got.TestCustom {
		t.Fatalf("Limits after reset = %+v, %v", got, err)
	}
}

// clusterSharedRound runs one round holding several companies' decisions
// (concurrent requests): the batcher makes one script call per company,
// each within one slot.
func clusterSharedRound(t *testing.T, l1 *Limiter) {
	t.Helper()
	calls := map[string][]*waiter{}
	for _, company := range []string{"umbrella", "hooli", "vandelay"} {
		calls[company] = waitFor(l1, company, invoicing.Live, 8)
	}
	drain(t, l1)
	for company, ws := range calls {
		n := 0
		for i, w := range ws {
			<-w.done
			if w.err != nil {
				t.Fatalf("%s: decision %d in a shared round: %v", company, i, w.err)
			}
			if w.d.Allowed {
				n++
			}
		}
		if n != 5 {
			t.Errorf("%s: %d of 8 admitted in one round, want the burst of 5", company, n)
		}
	}
}

// clusterLeasedLimit checks a leased limit: the instances key joins the
// company's slot, and two instances together admit no more than the bucket
// gives.
func clusterLeasedLimit(t *testing.T, rdb *redis.ClusterClient, prefix string, l1, l2 *Limiter) {
	t.Helper()
	ctx := context.Background()
	if err := l1.SetLimit(ctx, "initrode", invoicing.Live, Limit{Rate: 1000, Burst: 200}); err != nil {
		t.Fatal(err)
	}
	admitted, leased := 0, 0
	start := time.Now()
	for i := range 400 {
		l := []*Limiter{l1, l2}[i%2]
		d, err := l.Allow(ctx, "initrode", invoicing.Live)
		if err != nil || d.Local {
			t.Fatalf("leased limit on the cluster: %+v, %v", d, err)
		}
		if d.Allowed {
			admitted++
		}
		if d.Leased {
			leased++
		}
	}
	t.Logf("leased limit 1000/s, burst 200, on the cluster: %d of 400 admitted, %d from leases", admitted, leased)
	if leased == 0 {
		t.Error("no decision came from a lease")
	}
	if n, err := rdb.ZCard(ctx, instancesKey(prefix, "initrode", invoicing.Live)).Result(); err != nil || n != 2 {
		t.Errorf("instances of initrode: %d, %v; want 2", n, err)
	}
	// Redis refills 1000 tokens a second while the loop runs: the bound is
	// the time it took, whatever the machine's speed (plus 10 ms for the
	// clocks of Redis and of the test).
	if bound := 200 + 1000*(time.Since(start).Seconds()+0.01); float64(admitted) > bound {
		t.Errorf("%d admitted, more than the burst and the refill allow (%.0f)", admitted, bound)
	}
}
