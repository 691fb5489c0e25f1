package tenants

import (
	"context"
	"fmt"
	"strconv"

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
	var ls Limits
	ls.Live, ls.LiveCustom = parseOverride(v[0], v[1])
	ls.Test, ls.TestCustom = parseOverride(v[2], v[3])
	if !ls.LiveCustom {
		ls.Live = l.defaults[0]
	}
	if !ls.TestCustom {
		ls.Test = l.defaults[1]
	}
	return ls, nil
}

// SetLimit overrides the company's limit for the mode, or for both modes when
// m is "". Every instance applies it on the company's next request. The
// override lives in Redis only: it survives a Redis restart only if that Redis
// persists its data.
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
	fields := make([]any, 0, 4)
	for _, m := range modes {
		fields = append(fields, rateField[m.Index()], r, burstField[m.Index()], b)
	}
	if err := l.rdb.HSet(ctx, overrideKey(l.prefix, companyID), fields...).Err(); err != nil {
		return fmt.Errorf("tenants: set limit: %w", err)
	}
	return nil
}

// ResetLimits removes the company's overrides: the defaults apply again.
func (l *Limiter) ResetLimits(ctx context.Context, companyID string) error {
	if companyID == "" {
		return ErrInvalidCompany
	}
	if err := l.rdb.Del(ctx, overrideKey(l.prefix, companyID)).Err(); err != nil {
		return fmt.Errorf("tenants: reset limits: %w", err)
	}
	return nil
}
