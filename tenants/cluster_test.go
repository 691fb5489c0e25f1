package tenants

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
)

// TestLimiterOnRedisCluster runs the limiter on a real three-master Redis
// Cluster: the GCRA script reads the company's override hash and writes its
// TAT in one step, which Cluster allows only because both keys carry the
// {company} hash tag. A decision that fell back to local memory would hide a
// CROSSSLOT refusal, so every decision here must come from Redis.
func TestLimiterOnRedisCluster(t *testing.T) {
	rdb := testenv.RedisClusterClient(t)
	ctx := context.Background()
	if err := rdb.Eval(ctx, "return 1", []string{"a", "b"}).Err(); err == nil || !strings.Contains(err.Error(), "CROSSSLOT") {
		t.Fatalf("a script over two slots = %v, want CROSSSLOT: the test would prove nothing", err)
	}
	const prefix = "gw:tenants:"
	l1 := New(Config{Redis: rdb, Prefix: prefix, Logger: discard(), LiveDefault: Limit{Rate: 0.01, Burst: 5}})
	l2 := New(Config{Redis: rdb, Prefix: prefix, Logger: discard(), LiveDefault: Limit{Rate: 0.01, Burst: 5}})

	allowed := func(l *Limiter, company string, mode invoicing.Mode) bool {
		t.Helper()
		d, err := l.Allow(ctx, company, mode)
		if err != nil {
			t.Fatal(err)
		}
		if d.Local {
			t.Fatalf("decision made locally: Redis Cluster refused the script")
		}
		return d.Allowed
	}
	// Two instances share one budget of 5 per company.
	for _, company := range []string{"acme", "globex", "initech"} {
		n := 0
		for i := 0; i < 10; i++ {
			l := l1
			if i%2 == 1 {
				l = l2
			}
			if allowed(l, company, invoicing.Live) {
				n++
			}
		}
		if n != 5 {
			t.Errorf("%s: %d of 10 admitted by two instances, want the burst of 5", company, n)
		}
	}

	// An override set through one instance is what the other applies next.
	if err := l1.SetLimit(ctx, "acme", invoicing.Test, Limit{Rate: 0.01, Burst: 2}); err != nil {
		t.Fatalf("SetLimit: %v", err)
	}
	got, err := l2.Limits(ctx, "acme")
	if err != nil || got.Test != (Limit{Rate: 0.01, Burst: 2}) || !got.TestCustom {
		t.Fatalf("Limits after SetLimit = %+v, %v", got, err)
	}
	pattern := ""
	for i := 0; i < 4; i++ {
		pattern += fmt.Sprint(allowed(l2, "acme", invoicing.Test), " ")
	}
	if pattern != "true true false false " {
		t.Errorf("TEST decisions under burst 2: %s", pattern)
	}
	if err := l2.ResetLimits(ctx, "acme"); err != nil {
		t.Fatalf("ResetLimits: %v", err)
	}
	if got, err := l1.Limits(ctx, "acme"); err != nil || got.TestCustom {
		t.Fatalf("Limits after reset = %+v, %v", got, err)
	}

	// One round holding several companies' decisions (concurrent requests):
	// the batcher makes one script call per company, each within one slot.
	calls := map[string][]*decideCall{}
	for _, company := range []string{"umbrella", "hooli", "vandelay"} {
		for range 8 {
			c := &decideCall{companyID: company, m: invoicing.Live, done: make(chan struct{})}
			calls[company] = append(calls[company], c)
			l1.batch.queue = append(l1.batch.queue, c)
		}
	}
	l1.batch.busy = true
	for l1.sendRound() {
	}
	for company, cs := range calls {
		n := 0
		for i, c := range cs {
			<-c.done
			if c.err != nil {
				t.Fatalf("%s: decision %d in a shared round: %v", company, i, c.err)
			}
			if c.d.Allowed {
				n++
			}
		}
		if n != 5 {
			t.Errorf("%s: %d of 8 admitted in one round, want the burst of 5", company, n)
		}
	}
}
