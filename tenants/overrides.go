package tenants

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/invoicing-ao/gateway/internal/durable"
	"github.com/invoicing-ao/gateway/invoicing"
)

// Limits returns the company's limits, defaults where no override is set.
func (l *Limiter) Limits(ctx context.Context, companyID string) (Limits, error) {
	if companyID == "" {
		return Limits{}, ErrInvalidCompany
	}
	v, err := l.rdb.HMGet(ctx, overrideKey(l.prefix, companyID),
		rateField[0], burstField[0], rateField[1], burstField[1]).Result()
	if err != nil {
		return Limits{}, fmt.Errorf("tenants: read limits: %w", err)
	}
	return l.limitsFrom(v), nil
}

// LimitsOf returns the limits of each company of ids, in order, in one
// round trip (a pipeline: one per node on Redis Cluster).
func (l *Limiter) LimitsOf(ctx context.Context, ids []string) ([]Limits, error) {
	pipe := l.rdb.Pipeline()
	cmds := make([]*redis.SliceCmd, len(ids))
	for i, id := range ids {
		if id == "" {
			return nil, ErrInvalidCompany
		}
		cmds[i] = pipe.HMGet(ctx, overrideKey(l.prefix, id), rateField[0], burstField[0], rateField[1], burstField[1])
	}
	if len(ids) == 0 {
		return nil, nil
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fmt.Errorf("tenants: read limits: %w", err)
	}
	out := make([]Limits, len(ids))
	for i, cmd := range cmds {
		out[i] = l.limitsFrom(cmd.Val())
	}
	return out, nil
}

// limitsFrom reads the override hash's fields (live rate and burst, test
// rate and burst), defaults where no override is set.
func (l *Limiter) limitsFrom(v []any) Limits {
	var ls Limits
	ls.Live, ls.LiveCustom = parseOverride(v[0], v[1])
	ls.Test, ls.TestCustom = parseOverride(v[2], v[3])
	if !ls.LiveCustom {
		ls.Live = l.defaults[0]
	}
	if !ls.TestCustom {
		ls.Test = l.defaults[1]
	}
	return ls
}

// ErrNotReplicated: the limit change is in effect (on the Redis master,
// which every instance reads) but fewer than Config.MinReplicas replicas
// confirmed it in time, so a Redis failover could undo it. Making the same
// change again is safe, and confirms it once the replicas answer: each
// change writes even when it finds nothing to change, so that the wait
// after a retry vouches for the first attempt.
var ErrNotReplicated = invoicing.Define(invoicing.Error{Kind: invoicing.Unavailable, Code: durable.ProblemCode, Title: durable.ProblemTitle,
	Detail:  "Redis's replicas did not confirm the limit change in time, so it may or may not have applied: it is in effect now but the previous limit could return if Redis fails over; make the same change again once Redis is healthy (repeating it is safe).",
	Message: "tenants: the limit is changed but Redis's replicas did not confirm it, so a Redis failover could undo it; make the change again until this succeeds"})

// SetLimit overrides the company's limit for the mode, or for both modes when
// m is "". Every instance applies it on the company's next request. The
// override lives in Redis only: it survives a Redis restart only if that Redis
// persists its data, and a failover only if a replica has it (MinReplicas;
// ErrNotReplicated).
func (l *Limiter) SetLimit(ctx context.Context, companyID string, m invoicing.Mode, lim Limit) error {
	if companyID == "" {
		return ErrInvalidCompany
	}
	if err := lim.Validate(); err != nil {
		return err
	}
	modes := invoicing.Modes[:]
	if m != "" {
		if !m.Valid() {
			return fmt.Errorf("tenants: %w: %q", invoicing.ErrInvalidMode, invoicing.Clip(string(m)))
		}
		modes = modes[m.Index() : m.Index()+1]
	}
	r, b := strconv.FormatFloat(lim.Rate, 'g', -1, 64), strconv.Itoa(lim.Burst)
	// The time of the change: of two copies of a company's limits (an
	// export imported into a live Redis), the newer wins (state.go).
	fields := []any{changedField, l.nowMS()}
	for _, m := range modes {
		fields = append(fields, rateField[m.Index()], r, burstField[m.Index()], b)
	}
	key := overrideKey(l.prefix, companyID)
	// HSET writes even the values it finds: the retry of a change the
	// replicas did not confirm is replicated, and its wait covers the first.
	err := l.repl.Write(ctx, l.rdb, key, func(c redis.Cmdable) error { return c.HSet(ctx, key, fields...).Err() })
	return changed("set limit", err)
}

// changed is the error of a limit change whose write ended with err.
func changed(op string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, durable.ErrNotAcknowledged):
		return fmt.Errorf("%w: %s: %w", ErrNotReplicated, op, err)
	}
	return fmt.Errorf("tenants: %s: %w", op, err)
}

// ResetLimits removes the company's overrides: the defaults apply again.
func (l *Limiter) ResetLimits(ctx context.Context, companyID string) error {
	if companyID == "" {
		return ErrInvalidCompany
	}
	key := overrideKey(l.prefix, companyID)
	// What is left is the time of the reset, and no limit: of two copies
	// of a company's limits (an export imported into a live Redis), the
	// newer wins, and a reset is a change like any other. The write always
	// changes the hash, so that a reset repeated after an unconfirmed one
	// is replicated and its wait covers the first.
	err := l.repl.Write(ctx, l.rdb, key, func(c redis.Cmdable) error {
		_, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Del(ctx, key)
			p.HSet(ctx, key, changedField, l.nowMS())
			return nil
		})
		return err
	})
	return changed("reset limits", err)
}

// changedField is the override hash's field of the last change's time (Unix
// ms): a limit set, or the limits reset (then the only field).
const changedField = "changed"

// nowMS is the clock's time in Unix milliseconds, made to move: two changes
// within the same millisecond still order (the later one wins a merge).
func (l *Limiter) nowMS() int64 {
	for {
		last, now := l.lastMS.Load(), l.now().UnixMilli()
		if now <= last {
			now = last + 1
		}
		if l.lastMS.CompareAndSwap(last, now) {
			return now
		}
	}
}
