package audit

import (
	"errors"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
)

// TestEventsSurviveFailover records events on a real Redis master and
// replica under a Sentinel: an event reported recorded is on the replica,
// and in the log of the master the Sentinel promotes after losing the
// first; an event recorded while the replica is held back is returned with
// ErrNotReplicated, and the failover loses it.
func TestEventsSurviveFailover(t *testing.T) {
	t.Parallel()
	r := testenv.RedisReplicated(t)
	c := newClock()
	const prefix = "gw:audit:"
	sure := New(Config{Redis: r.Client(), Prefix: prefix, Now: c.Now, MinReplicas: 1, ReplicaTimeout: 30 * time.Second})
	quick := New(Config{Redis: r.Client(), Prefix: prefix, Now: c.Now, MinReplicas: 1, ReplicaTimeout: 200 * time.Millisecond})

	confirmed := mustRecord(t, sure, entry(ActionLimitsSet, "", nil, map[string]int{"burst": 5}))
	if n := r.Direct(r.Replica).XLen(ctx, sure.stream(companyA)).Val(); n != 1 {
		t.Fatalf("a confirmed event is not on the replica: %d events", n)
	}

	r.Link.Pause()
	c.Add(time.Second)
	ev, err := quick.Record(ctx, entry(ActionLimitsReset, "", nil, nil))
	if !errors.Is(err, ErrNotReplicated) || invoicing.KindOf(err) != invoicing.Unavailable || ev.ID == "" {
		t.Fatalf("record, replica held back = %+v, %v; want the event and ErrNotReplicated", ev, err)
	}
	if evs := readAll(t, quick, companyA, time.Time{}); len(evs) != 2 || evs[1].ID != ev.ID {
		t.Fatalf("an unconfirmed event is not on the master: %+v", evs)
	}

	r.Failover()
	after := New(Config{Redis: r.Client(), Prefix: prefix, Now: c.Now})
	if evs := readAll(t, after, companyA, time.Time{}); len(evs) != 1 || evs[0].ID != confirmed.ID {
		t.Fatalf("after the failover: %+v; want the confirmed event only", evs)
	}
}
