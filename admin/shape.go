package admin

import (
	"context"
	"slices"
	"time"

	"github.com/invoicing-ao/gateway/invoicing"
	"github.com/invoicing-ao/gateway/shape"
	"github.com/invoicing-ao/gateway/web"
)

// ShapeView is a company's recorded traffic in one mode: the distribution
// of its per-second rates, over the window and hour by hour, beside the
// limit in force.
type ShapeView struct {
	CompanyID string        `json:"companyId"`
	Mode      string        `json:"mode"`
	From      time.Time     `json:"from"`
	To        time.Time     `json:"to"`
	Limit     LimitView     `json:"limit"`
	Window    shape.Rates   `json:"window"`
	Hours     []shape.Rates `json:"hours"` // oldest first, the current hour last
	// SummarizedSeconds are the window's seconds older than 48 hours, read
	// from per-minute summaries (the rates of their minutes are estimated).
	SummarizedSeconds int `json:"summarizedSeconds"`
}

// TrafficShape reads a company's traffic in one mode from since until now.
func (s *Limits) TrafficShape(ctx context.Context, companyID, mode string, since time.Time) (ShapeView, error) {
	m, fe := shapeFields(mode, since, s.now())
	if len(fe) > 0 {
		return ShapeView{}, &web.Error{Code: "invalid_parameter", Detail: "The traffic shape query is invalid.", Fields: fe}
	}
	release, err := s.expensive.acquire(ctx)
	if err != nil {
		return ShapeView{}, err
	}
	defer release()
	buf := windows.Get().(*[]uint32)
	defer windows.Put(buf)
	company, series, cur, err := s.recorded(ctx, companyID, m, since, buf)
	if err != nil {
		return ShapeView{}, err
	}
	return ShapeView{CompanyID: company, Mode: string(m), From: series.Start, To: series.End(),
		Limit:  LimitView{Rate: cur.lim.Rate, Burst: cur.lim.Burst, Custom: cur.custom},
		Window: series.Rates(), Hours: series.Hours(), SummarizedSeconds: series.Summarized}, nil
}

// FarBelowShare is the share of its limit's rate under which a company's
// busiest seconds count as far below it: a limit that could be lowered.
const FarBelowShare = 0.1

// HeadroomView ranks the companies with recorded traffic in one mode by how
// near their busiest seconds come to their limit: each company's p99 busy
// second of today and yesterday (shape.Peak), over its limit's rate.
type HeadroomView struct {
	Mode      string     `json:"mode"`
	Companies int        `json:"companies"` // with recorded traffic today or yesterday
	Nearest   []Headroom `json:"nearest"`   // shares over FarBelowShare, the highest first
	FarBelow  []Headroom `json:"farBelow"`  // shares at most FarBelowShare, the lowest first
}

// Headroom is one company's busiest seconds beside its limit.
type Headroom struct {
	CompanyID string    `json:"companyId"`
	P99       uint32    `json:"p99"` // requests in its p99 busy second (within an eighth above)
	Limit     LimitView `json:"limit"`
	Share     float64   `json:"share"` // p99 over the limit's rate
}

// LimitHeadroom reads the top (1 to 100) companies nearest their limit in
// one mode, and as many far below it.
func (s *Limits) LimitHeadroom(ctx context.Context, mode string, top int) (HeadroomView, error) {
	m, fe := shapeFields(mode, time.Unix(0, 0), time.Unix(3600, 0)) // the mode only
	if err := inRange("top", top, 1, 100); err != nil {
		return HeadroomView{}, err
	}
	if len(fe) > 0 {
		return HeadroomView{}, &web.Error{Code: "invalid_parameter", Detail: "The headroom query is invalid.", Fields: fe}
	}
	if s.shape == nil {
		return HeadroomView{}, &web.Error{Code: "usage_unavailable", Detail: "Traffic is not recorded (no traffic shape store is configured)."}
	}
	peaks, err := s.shape.Peaks(ctx, m)
	if err != nil {
		return HeadroomView{}, err
	}
	ids := make([]string, len(peaks))
	for i, p := range peaks {
		ids[i] = p.CompanyID
	}
	limits, err := s.limiter.LimitsOf(ctx, ids)
	if err != nil {
		return HeadroomView{}, err
	}
	all := make([]Headroom, len(peaks))
	for i, p := range peaks {
		lim, custom := limits[i].Live, limits[i].LiveCustom
		if m == invoicing.Test {
			lim, custom = limits[i].Test, limits[i].TestCustom
		}
		all[i] = Headroom{CompanyID: p.CompanyID, P99: p.P99, Limit: LimitView{lim.Rate, lim.Burst, custom}, Share: float64(p.P99) / lim.Rate}
	}
	slices.SortStableFunc(all, func(a, b Headroom) int { return cmpShare(b, a) })
	// The two lists never share a company: those far below their limit are
	// not nearest it, however few companies there are.
	near := len(all)
	for near > 0 && all[near-1].Share <= FarBelowShare {
		near--
	}
	v := HeadroomView{Mode: string(m), Companies: len(all), Nearest: all[:min(top, near)], FarBelow: []Headroom{}}
	for i := len(all) - 1; i >= near && len(v.FarBelow) < top; i-- {
		v.FarBelow = append(v.FarBelow, all[i])
	}
	return v, nil
}

func cmpShare(a, b Headroom) int {
	switch {
	case a.Share < b.Share:
		return -1
	case a.Share > b.Share:
		return 1
	}
	return 0
}
