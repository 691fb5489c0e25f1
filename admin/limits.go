package admin

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

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
func (s *Service) CompanyLimits(ctx context.Context, companyID string) (LimitsView, error) {
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
func (s *Service) SetCompanyLimit(ctx context.Context, actor, companyID, mode string, rate float64, burst int) (LimitsView, error) {
	if err := checkActor(actor); err != nil {
		return LimitsView{}, err
	}
	companyID, err := parseCompany(companyID)
	if err != nil {
		return LimitsView{}, err
	}
	var m invoicing.Mode
	if mode != "" {
		if m, err = invoicing.ParseMode(mode); err != nil {
			return LimitsView{}, err
		}
	}
	before, err := s.CompanyLimits(ctx, companyID)
	if err != nil {
		return LimitsView{}, err
	}
	return s.limitsChanged(ctx, actor, audit.ActionLimitsSet, before,
		s.limiter.SetLimit(ctx, companyID, m, tenants.Limit{Rate: rate, Burst: burst}))
}

// ResetCompanyLimits puts a company back on the default limits, and records
// who did.
func (s *Service) ResetCompanyLimits(ctx context.Context, actor, companyID string) (LimitsView, error) {
	if err := checkActor(actor); err != nil {
		return LimitsView{}, err
	}
	companyID, err := parseCompany(companyID)
	if err != nil {
		return LimitsView{}, err
	}
	before, err := s.CompanyLimits(ctx, companyID)
	if err != nil {
		return LimitsView{}, err
	}
	return s.limitsChanged(ctx, actor, audit.ActionLimitsReset, before, s.limiter.ResetLimits(ctx, companyID))
}

// limitsChanged reads a company's limits after a change (changeErr its
// outcome) and records it. A change in effect but not confirmed by Redis's
// replicas is recorded too (it may be undone by a failover, but it applies
// now, and its repetition changes nothing the log would show), and its
// error returned.
func (s *Service) limitsChanged(ctx context.Context, actor, action string, before LimitsView, changeErr error) (LimitsView, error) {
	if changeErr != nil && !inEffect(changeErr) {
		return LimitsView{}, changeErr
	}
	after, err := s.CompanyLimits(ctx, before.CompanyID)
	if err != nil {
		return LimitsView{}, errors.Join(changeErr, err)
	}
	if err := s.record(ctx, audit.Entry{Actor: actor, CompanyID: before.CompanyID, Action: action}, before, after); err != nil {
		return LimitsView{}, err
	}
	if changeErr != nil {
		return LimitsView{}, changeErr
	}
	return after, nil
}

// inEffect reports whether err is a change made but not confirmed by
// Redis's replicas (redisMinReplicas): in effect now, possibly undone by a
// failover.
func inEffect(err error) bool { return web.Problem(err).Code == "change_not_replicated" }

func (s *Service) adminGetLimits(r *http.Request, p web.Params) (web.Answer, error) {
	return result(s.CompanyLimits(r.Context(), p.ByName("id")))
}

func (s *Service) adminSetLimits(r *http.Request, p web.Params) (web.Answer, error) {
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
	if len(fe) > 0 {
		return web.Answer{}, &web.Error{Code: "invalid_body", Detail: "The limit is invalid.", Fields: fe}
	}
	return result(s.SetCompanyLimit(r.Context(), actor(r), p.ByName("id"), mode, rate, burst))
}

func (s *Service) adminResetLimits(r *http.Request, p web.Params) (web.Answer, error) {
	return result(s.ResetCompanyLimits(r.Context(), actor(r), p.ByName("id")))
}
