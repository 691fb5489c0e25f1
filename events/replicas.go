package events

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"

	"github.com/invoicing-ao/gateway/internal/durable"
	"github.com/invoicing-ao/gateway/invoicing"
)

// Durability of endpoint changes. Redis replicates asynchronously: a change
// the master has applied is lost if the master dies before a replica has it
// and the replica is promoted. With Config.MinReplicas (or ReplicaTarget)
// set, each change's write is followed by a WAIT on its connection
// (internal/durable), and the change is reported done only once that many
// replicas have it. When they do not confirm it in time:
//   - a creation or a secret rotation is taken back (not waited for) and
//     reported as ErrNotReplicatedTakenBack: its secret was never shown, so
//     an endpoint signing with it would only fail its deliveries, and
//     repeating the request makes one endpoint or one rotation, not two;
//   - a change (URL, types, description, enabled, end) or a deletion stays
//     in effect on the master, which every instance reads, and is reported
//     as ErrNotReplicated. Repeating it is safe and confirms it: a change
//     always writes (its time and the endpoints' version move), and a
//     deletion repeated within Retention finds the record the first left
//     (gone) and writes it again, so that its WAIT covers the first;
//   - secrets sealed again (Reseal) stay in effect, and Reseal reports
//     ErrResealNotReplicated; it waits once, after all its writes, with a
//     write of its own (the sealed key), so that a Reseal run again with
//     nothing left to seal still vouches for the one before.
//
// Not waited for: deliveries, the queue and the endpoints' health (their
// losses are recovered by detection), and the undoing of a creation or a
// rotation: a failover in the middle of one may leave the endpoint created
// (with a secret nobody has: its deliveries fail until it is deleted) or the
// rotation made (rotate again).
var (
	// ErrNotReplicated: the change is in effect, but fewer replicas than
	// required confirmed it in time: a failover now could undo it.
	ErrNotReplicated = invoicing.Define(invoicing.Error{Kind: invoicing.Unavailable, Code: durable.ProblemCode, Title: durable.ProblemTitle,
		Detail:  "Redis's replicas did not confirm the change to the webhook endpoint in time, so it may or may not have applied: it is in effect now but a Redis failover could undo it; make the same change again once Redis is healthy (repeating it is safe).",
		Message: "events: the endpoint change is in effect but Redis's replicas did not confirm it, so a Redis failover could undo it; make it again"})
	// ErrNotReplicatedTakenBack: a creation or a rotation that fewer
	// replicas than required confirmed in time, and that was therefore
	// taken back: no secret was issued.
	ErrNotReplicatedTakenBack = invoicing.Define(invoicing.Error{Kind: invoicing.Unavailable, Code: durable.ProblemCode, Title: durable.ProblemTitle,
		Detail:  "Redis's replicas did not confirm the change in time, so it was taken back and no signing secret was issued; make the same request again once Redis is healthy.",
		Message: "events: the endpoint creation or rotation was not confirmed by Redis's replicas and was taken back (no secret issued); make it again"})
)

// confirm runs write, the writes of one change, all in key's hash slot, and
// waits for the replicas the configuration asks for. err is write's own
// error (nothing was waited for); unconfirmed reports that write succeeded
// on the master but the replicas did not confirm it.
func (es *Webhooks) confirm(ctx context.Context, key string, write func(c redis.Cmdable) error) (unconfirmed bool, err error) {
	err = es.repl.Write(ctx, es.rdb, key, write)
	if errors.Is(err, durable.ErrNotAcknowledged) {
		return true, nil
	}
	return false, err
}

// goneScript answers a deleted endpoint's record (KEYS[1], see layout.gone)
// and writes it again with its time to live, so that a repeated deletion's
// WAIT covers the first; nil when there is none.
var goneScript = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if not v then return false end
local ttl = redis.call('PTTL', KEYS[1])
if ttl > 0 then redis.call('SET', KEYS[1], v, 'PX', ttl) else redis.call('SET', KEYS[1], v) end
return v`)
