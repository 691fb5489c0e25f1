package tenants

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
)

// TestLimitChangesSurviveFailover sets and resets limits on a real Redis
// master and replica under a Sentinel: a change reported done is on the
// replica, and on the master the Sentinel promotes after losing the first;
// a change made while the replica is held back is in effect but reported
// unconfirmed (ErrNotReplicated), its retry from another instance too, and
// the failover loses it.
func TestLimitChangesSurviveFailover(t *testing.T) {
	t.Parallel()
	r := testenv.RedisReplicated(t)
	ctx := context.Background()
	const company = "0b7e3c6a-5f1d-4c1e-9a51-2d3f4e5a6b7c"
	limiter := func(rdb redis.UniversalClient, replicas int, timeout time.Duration) *Limiter {
		return newLimiter(Config{Redis: rdb, Prefix: "gw:tenants:", Logger: discard(), MinReplicas: replicas, ReplicaTimeout: timeout})
	}
	sure := limiter(r.Client(), 1, 30*time.Second)
	quick := limiter(r.Client(), 1, 200*time.Millisecond)
	retry := limiter(r.Client(), 1, 200*time.Millisecond)
	confirmed := Limit{Rate: 7, Burst: 14}

	if err := sure.SetLimit(ctx, company, invoicing.Live, confirmed); err != nil {
		t.Fatalf("set limit, replica in sync: %v", err)
	}
	if v := r.Direct(r.Replica).HGet(ctx, overrideKey("gw:tenants:", company), rateField[invoicing.Live.Index()]).Val(); v != "7" {
		t.Fatalf("a confirmed limit is not on the replica: rate %q", v)
	}

	r.Link.Pause()
	err := quick.SetLimit(ctx, company, invoicing.Live, Limit{Rate: 1, Burst: 1})
	if !errors.Is(err, ErrNotReplicated) || invoicing.KindOf(err) != invoicing.Unavailable {
		t.Fatalf("set limit, replica held back = %v, want ErrNotReplicated", err)
	}
	if ls, err := quick.Limits(ctx, company); err != nil || ls.Live != (Limit{Rate: 1, Burst: 1}) {
		t.Fatalf("an unconfirmed limit is in effect on the master: %+v, %v", ls, err)
	}
	if err := retry.SetLimit(ctx, company, invoicing.Live, Limit{Rate: 1, Burst: 1}); !errors.Is(err, ErrNotReplicated) {
		t.Fatalf("the same limit again, replica held back = %v, want ErrNotReplicated", err)
	}
	if err := quick.ResetLimits(ctx, company); !errors.Is(err, ErrNotReplicated) {
		t.Fatalf("reset, replica held back = %v, want ErrNotReplicated", err)
	}
	if ls, err := quick.Limits(ctx, company); err != nil || ls.LiveCustom {
		t.Fatalf("an unconfirmed reset is in effect on the master: %+v, %v", ls, err)
	}
	// The reset again finds nothing to delete, and is not confirmed either.
	if err := retry.ResetLimits(ctx, company); !errors.Is(err, ErrNotReplicated) {
		t.Fatalf("reset again, replica held back = %v, want ErrNotReplicated", err)
	}

	r.Failover()
	after := limiter(r.Client(), 0, 0)
	if ls, err := after.Limits(ctx, company); err != nil || ls.Live != confirmed || !ls.LiveCustom {
		t.Fatalf("after the failover: %+v, %v; want the confirmed %+v", ls, err, confirmed)
	}
	// The promoted master has no replica: a reset is in effect, unconfirmed.
	if err := quick.ResetLimits(ctx, company); !errors.Is(err, ErrNotReplicated) {
		t.Fatalf("reset on a master without replicas = %v, want ErrNotReplicated", err)
	}
}
