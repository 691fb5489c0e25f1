package admin

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/invoicing-ao/gateway/invoicing"
	"github.com/invoicing-ao/gateway/shape"
	"github.com/invoicing-ao/gateway/tenants"
	"github.com/invoicing-ao/gateway/web"
)

// Tuning limits from evidence: what a limit would have refused of a
// company's recorded traffic, before it is set (WhatIf), and the shape of
// that traffic beside the limit in force (TrafficShape, LimitHeadroom).

// ShapeStore reads the traffic recorded per company and mode (shape.Store).
type ShapeStore interface {
	SeriesInto(ctx context.Context, companyID string, m invoicing.Mode, from, to time.Time, into *[]uint32) (shape.Series, error)
	Peaks(ctx context.Context, m invoicing.Mode) ([]shape.Peak, error)
}

// windows keeps the seconds of windows read (30 days: 10 MB), for the next
// read to use again: the expensive reads run a few at a time (expensive.go),
// and so allocate a window each once, not once a read.
var windows = sync.Pool{New: func() any { return new([]uint32) }}

// DefaultMaxRefused is the share of requests the smallest burst WhatIf
// looks for may refuse, unless told: one in a thousand.
const DefaultMaxRefused = 0.001

// WhatIfQuery asks what a limit would have refused of a company's recorded
// traffic in one mode, from Since until now.
type WhatIfQuery struct {
	CompanyID string
	Mode      string  // LIVE or TEST, in any letter case
	Rate      float64 // requests per second
	Burst     int
	Since     time.Time // at most 30 days ago (shape.MaxWindow)
	// MaxRefused is the share of requests (0 to below 1) that the
	// smallest burst looked for at Rate may refuse.
	MaxRefused float64
}

// WhatIfView is what a proposed limit, and the limit in force, would have
// refused of a company's recorded traffic.
type WhatIfView struct {
	CompanyID string    `json:"companyId"`
	Mode      string    `json:"mode"`
	From      time.Time `json:"from"`
	To        time.Time `json:"to"`
	Offered   int64     `json:"offered"` // requests offered to the limit, admitted or refused
	Proposed  Outcome   `json:"proposed"`
	Current   Outcome   `json:"current"` // the limit in force now, on the same traffic
	// SmallestBurst is the smallest burst that, at the proposed rate,
	// would have refused at most MaxRefusedShare of the requests.
	SmallestBurst BurstFit `json:"smallestBurst"`
	// SummarizedSeconds are the window's seconds older than 48 hours, read
	// from per-minute summaries: within each of their minutes, how the
	// requests came is estimated.
	SummarizedSeconds int `json:"summarizedSeconds"`
	// Approximate says why the proposed limit's prediction may be off
	// (docs/operators.md says by how much): "summarized", seconds read
	// from minute summaries; "retries", traffic that met refusals, whose
	// clients' retries are in it; "short_bursts", bursts shorter than 125
	// ms (ShortBursts) where the limit refuses. Empty: the replay is the
	// limiter's arithmetic on the requests' own sixteenths of a second.
	Approximate []string `json:"approximate"`
	// ShortBursts are the bursts within one or two sixteenths of a second
	// (of 2 requests or more): each may be refused up to what the rate
	// refills in 62.5 ms more or less than said.
	ShortBursts int `json:"shortBursts"`
}

// Outcome is what one limit would have refused.
type Outcome struct {
	Rate   float64 `json:"rate"`
	Burst  int     `json:"burst"`
	Custom bool    `json:"custom"` // an override, not the default (the limit in force)
	// Recorded: the refusals are those the gateway made, as recorded (the
	// limit in force: the limits in force over the window), not a replay.
	Recorded       bool         `json:"recorded"`
	Refused        int64        `json:"refused"`
	RefusedShare   float64      `json:"refusedShare"` // of the offered, 0 to 1
	RefusedSeconds int          `json:"refusedSeconds"`
	RefusedMinutes int          `json:"refusedMinutes"`
	WorstMinute    *WorstMinute `json:"worstMinute"` // null when nothing is refused
}

// WorstMinute is the minute (of the clock) with the most refusals.
type WorstMinute struct {
	Start   time.Time `json:"start"`
	Refused int64     `json:"refused"`
	Offered int64     `json:"offered"`
}

// BurstFit is the smallest burst that keeps refusals at or under a share.
type BurstFit struct {
	MaxRefusedShare float64 `json:"maxRefusedShare"`
	// Burst is null when no burst up to 100,000 does at this rate, or when
	// TooFewRequests.
	Burst   *int  `json:"burst"`
	Refused int64 `json:"refused"`
	// TooFewRequests: fewer than MinFitRequests were offered, and no burst
	// is looked for: any would fit so few, and say nothing of the traffic
	// to come.
	TooFewRequests bool `json:"tooFewRequests"`
}

// WhatIf replays a company's recorded traffic through a proposed limit
// (the limiter's own arithmetic, the requests of each second placed by the
// sixteenths they came in), and says what the limit in force refused of it,
// as recorded. Where the prediction is approximate, it says why
// (Approximate; docs/operators.md says by how much).
func (s *Limits) WhatIf(ctx context.Context, q WhatIfQuery) (WhatIfView, error) {
	m, fe := s.whatIfFields(q, s.now())
	if len(fe) > 0 {
		return WhatIfView{}, &web.Error{Code: "invalid_parameter", Detail: "The what-if query is invalid.", Fields: fe}
	}
	release, err := s.expensive.acquire(ctx)
	if err != nil {
		return WhatIfView{}, err
	}
	defer release()
	buf := windows.Get().(*[]uint32)
	defer windows.Put(buf)
	company, series, current, err := s.recorded(ctx, q.CompanyID, m, q.Since, buf)
	if err != nil {
		return WhatIfView{}, err
	}
	tr := traffic(series).Indexed()
	proposed := tenants.Limit{Rate: q.Rate, Burst: q.Burst}.WhatIf(tr)
	v := WhatIfView{CompanyID: company, Mode: string(m), From: series.Start, To: series.End(),
		SummarizedSeconds: series.Summarized, Approximate: []string{},
		Offered:       proposed.Offered,
		Proposed:      outcome(proposed, false),
		Current:       outcome(tenants.Recorded(current.lim, tr), current.custom),
		SmallestBurst: BurstFit{MaxRefusedShare: q.MaxRefused}}
	v.Current.Recorded = true
	if v.SmallestBurst.TooFewRequests = proposed.Offered < MinFitRequests; !v.SmallestBurst.TooFewRequests {
		if b, ok := tenants.SmallestBurst(q.Rate, tr, q.MaxRefused); ok {
			v.SmallestBurst.Burst = &b
			v.SmallestBurst.Refused = tenants.Limit{Rate: q.Rate, Burst: b}.WhatIf(tr).Refused
		}
	}
	if v.SummarizedSeconds > 0 {
		v.Approximate = append(v.Approximate, "summarized")
	}
	if v.Current.Refused > 0 {
		v.Approximate = append(v.Approximate, "retries")
	}
	if v.ShortBursts = tr.ShortBursts(); v.ShortBursts > 0 && proposed.Refused > 0 {
		v.Approximate = append(v.Approximate, "short_bursts")
	}
	return v, nil
}

// MinFitRequests is the fewest requests offered from which WhatIf looks
// for the smallest burst: on fewer, a burst of 1 fits nine requests
// minutes apart, and says nothing of the traffic to come.
const MinFitRequests = 100

// traffic is a series as the replays read it.
func traffic(sr shape.Series) tenants.Traffic {
	tr := tenants.Traffic{Start: sr.Start, Counts: sr.Counts, Busy: sr.Busy,
		Uneven: make([]tenants.Uneven, len(sr.Uneven)), Refused: make([]tenants.Refused, len(sr.Refused))}
	for i, u := range sr.Uneven {
		tr.Uneven[i] = tenants.Uneven(u)
	}
	for i, r := range sr.Refused {
		tr.Refused[i] = tenants.Refused(r)
	}
	return tr
}

// whatIfFields checks a what-if query's mode, window, limit and share at
// now, and says which is at fault.
func (s *Limits) whatIfFields(q WhatIfQuery, now time.Time) (invoicing.Mode, []web.FieldError) {
	m, fe := shapeFields(q.Mode, q.Since, now)
	if err := (tenants.Limit{Rate: q.Rate, Burst: 1}).Validate(); err != nil {
		fe = append(fe, web.FieldError{Field: "rate", Message: "must be " + strconv.FormatFloat(tenants.MinRate, 'g', -1, 64) + " to " + strconv.Itoa(tenants.MaxRate) + " requests per second"})
	}
	if err := (tenants.Limit{Rate: 1, Burst: q.Burst}).Validate(); err != nil {
		fe = append(fe, web.FieldError{Field: "burst", Message: "must be 1 to " + strconv.Itoa(tenants.MaxBurst)})
	}
	if !(q.MaxRefused >= 0 && q.MaxRefused < 1) {
		fe = append(fe, web.FieldError{Field: "maxRefused", Message: "must be a share from 0 to below 1"})
	}
	return m, fe
}

func outcome(w tenants.WhatIf, custom bool) Outcome {
	o := Outcome{Rate: w.Limit.Rate, Burst: w.Limit.Burst, Custom: custom, Refused: w.Refused, RefusedShare: w.Share(),
		RefusedSeconds: w.RefusedSeconds, RefusedMinutes: w.RefusedMinutes}
	if w.Refused > 0 {
		o.WorstMinute = &WorstMinute{Start: w.WorstMinute, Refused: w.WorstMinuteRefused, Offered: w.WorstMinuteOffered}
	}
	return o
}

// sinceSlack is how far before 30 days ago a window may start and still be
// read, from 30 days ago: "the last 30 days" counted from a clock read a
// moment earlier (the command line's, a console's) is not refused.
const sinceSlack = time.Minute

// shapeFields checks a query's mode and window start at now, and says
// which is at fault.
func shapeFields(mode string, since, now time.Time) (invoicing.Mode, []web.FieldError) {
	var fe []web.FieldError
	m, err := invoicing.ParseMode(mode)
	if err != nil {
		fe = append(fe, web.FieldError{Field: "mode", Message: "must be LIVE or TEST"})
	}
	if !since.Before(now) || since.Before(now.Add(-shape.MaxWindow-sinceSlack)) {
		fe = append(fe, web.FieldError{Field: "since", Message: "must be within the last 30 days"})
	}
	return m, fe
}

// windowStart is since, read from 30 days ago at the earliest.
func windowStart(since, now time.Time) time.Time {
	if earliest := now.Add(-shape.MaxWindow); since.Before(earliest) {
		return earliest
	}
	return since
}

// limitInForce is a company's limit in one mode, and whether it is an
// override.
type limitInForce struct {
	lim    tenants.Limit
	custom bool
}

// recorded reads a company's traffic in mode m from since until now, and
// its limit in force.
func (s *Limits) recorded(ctx context.Context, companyID string, m invoicing.Mode, since time.Time, buf *[]uint32) (string, shape.Series, limitInForce, error) {
	if s.shape == nil {
		return "", shape.Series{}, limitInForce{}, &web.Error{Code: "usage_unavailable", Detail: "Traffic is not recorded (no traffic shape store is configured)."}
	}
	company, err := s.knownCompany(ctx, companyID)
	if err != nil {
		return "", shape.Series{}, limitInForce{}, err
	}
	now := s.now()
	series, err := s.shape.SeriesInto(ctx, company, m, windowStart(since, now), now, buf)
	if err != nil {
		return "", shape.Series{}, limitInForce{}, err
	}
	ls, err := s.limiter.Limits(ctx, company)
	if err != nil {
		return "", shape.Series{}, limitInForce{}, err
	}
	cur := limitInForce{ls.Live, ls.LiveCustom}
	if m == invoicing.Test {
		cur = limitInForce{ls.Test, ls.TestCustom}
	}
	return company, series, cur, nil
}
