package authz

import (
	"errors"
	"fmt"

	"github.com/invoicing-ao/gateway/internal/durable"
	"github.com/invoicing-ao/gateway/invoicing"
)

// Durability of the management writes. Redis replicates asynchronously: a
// change the master has applied is lost if the master dies before a
// replica has it and the replica is promoted. With Config.MinReplicas set,
// each write of a creation, a roll or a revocation is followed by a WAIT
// on its connection (internal/durable), and a change is reported done only
// once that many replicas have acknowledged every one of its writes.
//
// When they do not, in time:
//   - a revocation stays in effect (it is on the master, which every
//     instance reads) and is reported as ErrRevocationNotReplicated.
//     Revoking again is safe: the repeated revocation writes the state it
//     finds, so its own acknowledgement vouches for the first (a write
//     that changed nothing would not, on some Redis versions);
//   - a creation or a roll is taken back, record first, and reported as
//     ErrNotReplicated: its secret was never returned, so a retry makes a
//     new key and never a second usable one.
//
// Not waited for: last-used times, a rolled key's score in the count
// (reclaim repairs it), the undoing of a change, the count of a revoked key
// (reclaim frees a revoked key's slot), and the pub/sub announcement. A
// failover that loses one of them loses nothing a key's use depends on,
// except an undo: what it took back may then be found after the failover
// (a new key whose secret was never shown; the old key of a roll marked
// rolled, ending at the overlap's end), which `keys list` shows.
var (
	// ErrRevocationNotReplicated: the key is revoked on the Redis master,
	// so refused everywhere within CacheTTL, but fewer than MinReplicas
	// replicas confirmed it in time: a failover now could make it work
	// again.
	ErrRevocationNotReplicated = invoicing.Define(invoicing.Error{Kind: invoicing.Unavailable, Code: durable.ProblemCode, Title: durable.ProblemTitle,
		Detail:  "Redis's replicas did not confirm the revocation in time, so it may or may not have applied: the key is refused now but could work again if Redis fails over; revoke it again once Redis is healthy (repeating it is safe).",
		Message: "authz: the key is revoked but Redis's replicas did not confirm it, so a Redis failover could undo it; revoke it again until this succeeds"})
	// ErrNotReplicated: a creation or a roll that fewer than MinReplicas
	// replicas confirmed in time, and that was therefore taken back: no
	// secret was issued, the old key of a roll is as it was.
	ErrNotReplicated = invoicing.Define(invoicing.Error{Kind: invoicing.Unavailable, Code: durable.ProblemCode, Title: durable.ProblemTitle,
		Detail:  "Redis's replicas did not confirm the change in time, so it was taken back and no secret was issued; make the same request again once Redis is healthy (it makes one key, never two).",
		Message: "authz: the change was not made: Redis's replicas did not confirm it in time, so it was taken back (no secret issued); retry"})
)

// failed is the error of a change op whose write failed: ErrNotReplicated
// when the master applied it but the replicas did not confirm it (the
// caller takes it back), else ErrUnavailable.
func failed(op string, err error) error {
	if errors.Is(err, durable.ErrNotAcknowledged) {
		return fmt.Errorf("%w: %s: %w", ErrNotReplicated, op, err)
	}
	return unavailable(op, err)
}
