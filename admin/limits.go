package admin

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/invoicing-ao/gateway/audit"
	"github.com/invoicing-ao/gateway/invoicing"
	"github.com/invoicing-ao/gateway/tenants"
	"github.com/invoicing-ao/gateway/web"
)

// Limiter reads, overrides and resets each company's rate limits
// (tenants.Limiter).
type Limiter interface {
	Limits(ctx context.Context, companyID string) (tenants.Limits, error)
	LimitsOf(ctx context.Context, companyIDs []string) ([]tenants.Limits, error)
	SetLimit(ctx context.Context, companyID string, mode invoicing.Mode, lim tenants.Limit) error
	ResetLimits(ctx context.Context, companyID string) error
}

// Limits administers each company's rate limits: reads, sets and resets
// them, and says from the recorded traffic what a limit would have refused
// before it is set (whatif.go, shape.go, whatifhttp.go), for the admin API
// and "gateway limits".
type Limits struct {
	*base
	limiter   Limiter
	shape     ShapeStore // nil: traffic is not recorded
	expensive *gate      // the what-ifs' and shapes' turns (expensive.go)
}

// LimitsView is a company's limits as the admin API and the CLI show them.
type LimitsView struct {
	CompanyID string    `json:"companyId"`
	Live      LimitView `json:"live"`
	Test      LimitView `json:"test"`
}

// LimitView is one mode's limit; Custom is false while the default applies.
type LimitView struct {
	Rate   float64 `json:"rate"`
	Burst  int     `json:"burst"`
	Custom bool    `json:"custom"`
}

// CompanyLimits reads a company's limits.
func (s *Limits) CompanyLimits(ctx context.Context, companyID string) (LimitsView, error) {
	companyID, err := parseCompany(companyID)
	if err != nil {
		return LimitsView{}, err
	}
	l, err := s.limiter.Limits(ctx, companyID)
	if err != nil {
		return LimitsView{}, err
	}
	return LimitsView{CompanyID: companyID,
		Live: LimitView{l.Live.Rate, l.Live.Burst, l.LiveCustom},
		Test: LimitView{l.Test.Rate, l.Test.Burst, l.TestCustom}}, nil
}

// SetCompanyLimit overrides a company's limit for one mode (LIVE or TEST in
// any letter case; "" for both), and records who did.
func (s *Limits) SetCompanyLimit(ctx context.Context, actor, companyID, mode string, rate float64, burst int) (LimitsView, error) {
	var m invoicing.Mode
	parseMode := func() (err error) {
		if mode != "" {
			m, err = invoicing.ParseMode(mode)
		}
		return err
	}
	return apply(ctx, s.limitsChange(actor, audit.ActionLimitsSet, companyID, parseMode, func(ctx context.Context, companyID string) error {
		return s.limiter.SetLimit(ctx, companyID, m, tenants.Limit{Rate: rate, Burst: burst})
	}))
}

// ResetCompanyLimits puts a company back on the default limits, and records
// who did.
func (s *Limits) ResetCompanyLimits(ctx context.Context, actor, companyID string) (LimitsView, error) {
	return apply(ctx, s.limitsChange(actor, audit.ActionLimitsReset, companyID, nil, s.limiter.ResetLimits))
}

// limitsChange is a change of a company's limits (set): check (nil: none)
// refuses its input once the company id is read; the audit log keeps the
// limits before and after. A change the replicas did not confirm applies
// now: the limits after it are read and recorded all the same (apply).
func (s *Limits) limitsChange(actor, action, companyID string, check func() error,
	set func(ctx context.Context, companyID string) error) change[LimitsView, LimitsView] {
	return change[LimitsView, LimitsView]{actor: actor, audited: s.auditReady,
		read: func(ctx context.Context) (LimitsView, error) {
			// A company the platform does not know gets no override: a
			// mistyped id is said to be one.
			if _, err := s.knownCompany(ctx, companyID); err != nil {
				return LimitsView{}, err
			}
			if check != nil {
				if err := check(); err != nil {
					return LimitsView{}, err
				}
			}
			return s.CompanyLimits(ctx, companyID)
		},
		make: func(ctx context.Context, before LimitsView) (LimitsView, bool, error) {
			err := set(ctx, before.CompanyID)
			if err != nil && !inEffect(err) {
				return LimitsView{}, false, err
			}
			after, rerr := s.CompanyLimits(ctx, before.CompanyID)
			if rerr != nil {
				return LimitsView{}, false, errors.Join(err, rerr)
			}
			return after, true, err
		},
		record: func(ctx context.Context, before, after LimitsView) error {
			return s.record(ctx, audit.Entry{Actor: actor, CompanyID: before.CompanyID, Action: action}, before, after)
		}}
}

func (s *Limits) adminGetLimits(r *http.Request, p web.Params) (web.Answer, error) {
	return result(s.CompanyLimits(r.Context(), p.ByName("id")))
}

func (s *Limits) adminSetLimits(r *http.Request, p web.Params) (web.Answer, error) {
	m, fe, err := web.ReadJSONBody(r, []string{"mode", "rate", "burst"})
	if err != nil {
		return web.Answer{}, err
	}
	mode, _ := web.StringMember(m, "mode", &fe)
	var rate float64
	var burst int
	if raw, ok := m["rate"]; !ok || json.Unmarshal(raw, &rate) != nil {
		fe = append(fe, web.FieldError{Field: "rate", Message: "must be a number of requests per second"})
	}
	if raw, ok := m["burst"]; !ok || json.Unmarshal(raw, &burst) != nil {
		fe = append(fe, web.FieldError{Field: "burst", Message: "must be an integer"})
	}
	fe = append(fe, limitFields(fe, mode, rate, burst)...)
	switch len(fe) {
	case 0:
	case 1: // said in full, as the limiter says it
		return web.Answer{}, &web.Error{Code: "invalid_body", Detail: fe[0].Field + " " + fe[0].Message + ".", Fields: fe}
	default:
		return web.Answer{}, &web.Error{Code: "invalid_body", Detail: "The limit is invalid: " + strconv.Itoa(len(fe)) + " values are at fault.", Fields: fe}
	}
	return result(s.SetCompanyLimit(r.Context(), actor(r), p.ByName("id"), mode, rate, burst))
}

func (s *Limits) adminResetLimits(r *http.Request, p web.Params) (web.Answer, error) {
	return result(s.ResetCompanyLimits(r.Context(), actor(r), p.ByName("id")))
}

// limitFields names every one of a limit's mode, rate and burst out of
// range, but those already failed (fe).
func limitFields(fe []web.FieldError, mode string, rate float64, burst int) []web.FieldError {
	failed := map[string]bool{}
	for _, f := range fe {
		failed[f.Field] = true
	}
	var out []web.FieldError
	if _, err := invoicing.ParseMode(mode); mode != "" && err != nil && !failed["mode"] {
		out = append(out, web.FieldError{Field: "mode", Message: "must be LIVE or TEST"})
	}
	for _, check := range []struct {
		field string
		lim   tenants.Limit
	}{{"rate", tenants.Limit{Rate: rate, Burst: 1}}, {"burst", tenants.Limit{Rate: 1, Burst: burst}}} {
		var fieldErr *invoicing.FieldError
		if err := check.lim.Validate(); err != nil && !failed[check.field] && errors.As(err, &fieldErr) {
			out = append(out, web.FieldError{Field: check.field, Message: fieldErr.Message})
		}
	}
	return out
}
