package admin

import (
	"context"
	"net/http"
	"strconv"

	"github.com/invoicing-ao/gateway/usage"
	"github.com/invoicing-ao/gateway/web"
)

// UsageCounter reads each company's request counts, by day and by minute,
// and the overview across companies (usage.Counter).
type UsageCounter interface {
	Days(ctx context.Context, companyID string, days int) ([]usage.Day, error)
	Minutes(ctx context.Context, companyID string, minutes int) ([]usage.Minute, error)
	Overview(ctx context.Context, top int) (usage.Overview, error)
}

// Usage reads the requests counted per company and across companies: by
// day (usage.go), by minute beside the limits, and the overview of the
// busiest (traffic.go), for the admin API, its console and "gateway usage".
type Usage struct {
	*base
	usage  UsageCounter // nil: usage is not counted
	limits limitsReader
}

// UsageView is a company's usage as the admin API and the CLI show it.
type UsageView struct {
	CompanyID string      `json:"companyId"`
	Days      []usage.Day `json:"days"` // oldest first, today last
}

// DefaultUsageDays is how many days a usage query covers unless told.
const DefaultUsageDays = 7

// CompanyUsage reads a company's requests per day, by mode and status class,
// for the last days days (today included). It is the one path of the admin
// API and of "gateway usage".
func (s *Usage) CompanyUsage(ctx context.Context, companyID string, days int) (UsageView, error) {
	companyID, err := s.usageOf(ctx, companyID, "days", days, 1, usage.MaxDays)
	if err != nil {
		return UsageView{}, err
	}
	d, err := s.usage.Days(ctx, companyID, days)
	if err != nil {
		return UsageView{}, err
	}
	return UsageView{CompanyID: companyID, Days: d}, nil
}

// usageOf checks a usage query (usage counted, the count n of name in
// [lo, hi], the company known) and returns the company's canonical id.
func (s *Usage) usageOf(ctx context.Context, companyID, name string, n, lo, hi int) (string, error) {
	if err := s.usageReady(); err != nil {
		return "", err
	}
	if err := inRange(name, n, lo, hi); err != nil {
		return "", err
	}
	return s.knownCompany(ctx, companyID)
}

func (s *Usage) usageReady() error {
	if s.usage == nil {
		return &web.Error{Code: "usage_unavailable", Detail: "Usage counting is not configured."}
	}
	return nil
}

// inRange refuses a count parameter outside [lo, hi].
func inRange(name string, n, lo, hi int) error {
	if n < lo || n > hi {
		msg := "must be " + strconv.Itoa(lo) + " to " + strconv.Itoa(hi)
		return &web.Error{Code: "invalid_parameter", Detail: name + " " + msg + ".", Fields: []web.FieldError{{Field: name, Message: msg}}}
	}
	return nil
}

// intParam reads an optional integer query parameter given at most once.
func intParam(r *http.Request, name string, def int) (int, error) {
	v, ok := r.URL.Query()[name]
	if !ok {
		return def, nil
	}
	n, err := strconv.Atoi(v[0])
	if err != nil || len(v) > 1 {
		return 0, &web.Error{Code: "invalid_parameter", Detail: name + " must be one integer.", Fields: []web.FieldError{{Field: name, Message: "must be an integer"}}}
	}
	return n, nil
}

func (s *Usage) adminUsage(r *http.Request, p web.Params) (web.Answer, error) {
	days, err := intParam(r, "days", DefaultUsageDays)
	if err != nil {
		return web.Answer{}, err
	}
	return result(s.CompanyUsage(r.Context(), p.ByName("id"), days))
}
