package gateway

import (
	"context"
	"net/http"
	"strconv"

	"github.com/julienschmidt/httprouter"

	"github.com/invoicing-ao/gateway/invoicing"
	"github.com/invoicing-ao/gateway/usage"
)

// Usage counts each company's requests (usage.Counter).
type Usage interface {
	Add(companyID string, mode invoicing.Mode, status int)
	Days(ctx context.Context, companyID string, days int) ([]usage.Day, error)
	Minutes(ctx context.Context, companyID string, minutes int) ([]usage.Minute, error)
	Overview(ctx context.Context, top int) (usage.Overview, error)
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
func (s *Server) CompanyUsage(ctx context.Context, companyID string, days int) (UsageView, error) {
	if s.usage == nil {
		return UsageView{}, &Error{Code: "usage_unavailable", Detail: "Usage counting is not configured."}
	}
	if days < 1 || days > usage.MaxDays {
		return UsageView{}, &Error{Code: "invalid_parameter", Detail: "days must be 1 to " + strconv.Itoa(usage.MaxDays) + ".",
			Fields: []FieldError{{"days", "must be 1 to " + strconv.Itoa(usage.MaxDays)}}}
	}
	companyID, err := s.knownCompany(ctx, companyID)
	if err != nil {
		return UsageView{}, err
	}
	d, err := s.usage.Days(ctx, companyID, days)
	if err != nil {
		return UsageView{}, err
	}
	return UsageView{CompanyID: companyID, Days: d}, nil
}

// intParam reads an optional integer query parameter given at most once.
func intParam(r *http.Request, name string, def int) (int, error) {
	v, ok := r.URL.Query()[name]
	if !ok {
		return def, nil
	}
	n, err := strconv.Atoi(v[0])
	if err != nil || len(v) > 1 {
		return 0, &Error{Code: "invalid_parameter", Detail: name + " must be one integer.", Fields: []FieldError{{name, "must be an integer"}}}
	}
	return n, nil
}

func (s *Server) adminUsage(r *http.Request, p httprouter.Params) (answer, error) {
	days, err := intParam(r, "days", DefaultUsageDays)
	if err != nil {
		return answer{}, err
	}
	return result(s.CompanyUsage(r.Context(), p.ByName("id"), days))
}
