package admin

import (
	"context"
	"net/http"

	"github.com/invoicing-ao/gateway/usage"
	"github.com/invoicing-ao/gateway/web"
)

// The platform team's view of traffic (the admin console): every company's
// at a glance, and one company's by the minute beside its limits.

// limitsReader reads a company's limits (Limits), shown beside its
// traffic.
type limitsReader interface {
	CompanyLimits(ctx context.Context, companyID string) (LimitsView, error)
}

// MinutesView is a company's requests per minute, with its limits and the
// rate it is running at, as the admin API shows them.
type MinutesView struct {
	CompanyID string         `json:"companyId"`
	Minutes   []usage.Minute `json:"minutes"` // oldest first, the current minute last
	Limits    LimitsView     `json:"limits"`
	// Rate is requests per second in the last complete minute, per mode.
	Rate ModeRates `json:"rate"`
}

// ModeRates are requests per second by mode.
type ModeRates struct {
	Live float64 `json:"live"`
	Test float64 `json:"test"`
}

// CompanyMinutes reads a company's last minutes (1 to usage.MaxMinutes).
func (s *Usage) CompanyMinutes(ctx context.Context, companyID string, minutes int) (MinutesView, error) {
	companyID, err := s.usageOf(ctx, companyID, "minutes", minutes, 2, usage.MaxMinutes)
	if err != nil {
		return MinutesView{}, err
	}
	ms, err := s.usage.Minutes(ctx, companyID, minutes)
	if err != nil {
		return MinutesView{}, err
	}
	lim, err := s.limits.CompanyLimits(ctx, companyID)
	if err != nil {
		return MinutesView{}, err
	}
	return MinutesView{CompanyID: companyID, Minutes: ms, Limits: lim, Rate: lastRate(ms)}, nil
}

// lastRate is the rate of the last complete minute (the one before the
// current, which is still counting).
func lastRate(ms []usage.Minute) ModeRates {
	if len(ms) < 2 {
		return ModeRates{}
	}
	m := ms[len(ms)-2]
	sum := func(c map[string]int64) (n int64) {
		for _, v := range c {
			n += v
		}
		return n
	}
	return ModeRates{Live: float64(sum(m.Live)) / 60, Test: float64(sum(m.Test)) / 60}
}

// OverviewView is the traffic of every company, with the busiest companies
// of the last hour beside their limits.
type OverviewView struct {
	usage.Overview
	// NearLimit are the busiest companies of the last hour that ran at 80 %
	// or more of a mode's limit in the last complete minute, or had 429s today.
	NearLimit []NearLimit `json:"nearLimit"`
}

// NearLimit is one company's rate beside its limits.
type NearLimit struct {
	CompanyID   string     `json:"companyId"`
	Rate        ModeRates  `json:"rate"`
	Limits      LimitsView `json:"limits"`
	RateLimited int64      `json:"rateLimitedToday"`
}

// nearShare is the share of a limit's rate from which a company is near it.
const nearShare = 0.8

// TrafficOverview reads the overview with the top companies (1 to 100).
func (s *Usage) TrafficOverview(ctx context.Context, top int) (OverviewView, error) {
	if err := s.usageReady(); err != nil {
		return OverviewView{}, err
	}
	if err := inRange("top", top, 1, 100); err != nil {
		return OverviewView{}, err
	}
	o, err := s.usage.Overview(ctx, top)
	if err != nil {
		return OverviewView{}, err
	}
	v := OverviewView{Overview: o, NearLimit: []NearLimit{}}
	limited := map[string]int64{}
	for _, c := range o.TopToday {
		limited[c.CompanyID] = c.RateLimited
	}
	for _, c := range o.TopLastHour {
		ms, err := s.usage.Minutes(ctx, c.CompanyID, 2)
		if err != nil {
			return OverviewView{}, err
		}
		lim, err := s.limits.CompanyLimits(ctx, c.CompanyID)
		if err != nil {
			return OverviewView{}, err
		}
		rate := lastRate(ms)
		if rate.Live >= nearShare*lim.Live.Rate || rate.Test >= nearShare*lim.Test.Rate || limited[c.CompanyID] > 0 {
			v.NearLimit = append(v.NearLimit, NearLimit{CompanyID: c.CompanyID, Rate: rate, Limits: lim, RateLimited: limited[c.CompanyID]})
		}
	}
	return v, nil
}

func (s *Usage) adminMinutes(r *http.Request, p web.Params) (web.Answer, error) {
	n, err := intParam(r, "minutes", 60)
	if err != nil {
		return web.Answer{}, err
	}
	return result(s.CompanyMinutes(r.Context(), p.ByName("id"), n))
}

func (s *Usage) adminOverview(r *http.Request, _ web.Params) (web.Answer, error) {
	n, err := intParam(r, "top", 10)
	if err != nil {
		return web.Answer{}, err
	}
	return result(s.TrafficOverview(r.Context(), n))
}
