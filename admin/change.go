package admin

import (
	"context"

	"github.com/invoicing-ao/gateway/web"
)

// change is one change of a key, a company's limits or a webhook, as apply
// makes it: B is what the audit log keeps of the state before, A what the
// change answers. Every change is made the same way, so that none forgets
// its actor, its refused texts or its audit record, and all treat a change
// that Redis's replicas did not confirm alike.
type change[B, A any] struct {
	actor string // who the change is made for (X-Actor, or the CLI's --actor)
	// ready refuses the change while what it changes is not configured;
	// nil: always ready.
	ready func() error
	// audited refuses the change while the audit log cannot record it
	// (Service.auditReady), before anything is changed.
	audited func(ctx context.Context) error
	// what names the changed thing when a text is refused ("The key"), and
	// texts are the text fields the change sets (text.go); none: no text.
	what  string
	texts []textField
	// read reads the state before the change, for the audit log (and checks
	// what the change needs, such as its company); nil: the zero B (a
	// creation, or a change that answers the state it changed).
	read func(ctx context.Context) (B, error)
	// make makes the change: the state after it, and whether it was made.
	// An error with made true is a change in effect but not confirmed by
	// Redis's replicas (inEffect).
	make func(ctx context.Context, before B) (after A, made bool, err error)
	// record records a change made in the audit log (base.record).
	record func(ctx context.Context, before B, after A) error
}

// apply makes c: readiness (its own and the audit log's), actor and text
// checks, before anything is read or changed; the state before; the
// change; its audit record. A change in
// effect but not confirmed by Redis's replicas is recorded (it applies now,
// though a failover may undo it; repeating it, which its error says to do,
// changes nothing the log would show), and its error returned. A change
// made that the audit log did not take answers notAudited (record).
func apply[B, A any](ctx context.Context, c change[B, A]) (A, error) {
	var zero A
	if c.ready != nil {
		if err := c.ready(); err != nil {
			return zero, err
		}
	}
	if err := checkActor(c.actor); err != nil {
		return zero, err
	}
	if err := refuseTexts(c.what, c.texts...); err != nil {
		return zero, err
	}
	if c.audited != nil {
		if err := c.audited(ctx); err != nil {
			return zero, err
		}
	}
	var before B
	if c.read != nil {
		var err error
		if before, err = c.read(ctx); err != nil {
			return zero, err
		}
	}
	after, made, err := c.make(ctx, before)
	if err != nil && !(made && inEffect(err)) {
		return zero, err
	}
	if made {
		if rerr := c.record(ctx, before, after); rerr != nil {
			return zero, rerr
		}
	}
	if err != nil {
		return zero, err
	}
	return after, nil
}

// none is the state before a change that has none to record (a creation),
// or that answers the state it changed.
type none = struct{}

// inEffect reports whether err is a change made but not confirmed by
// Redis's replicas (redisMinReplicas): in effect now, possibly undone by a
// failover.
func inEffect(err error) bool { return web.Problem(err).Code == "change_not_replicated" }
