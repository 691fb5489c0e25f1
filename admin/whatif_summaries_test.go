package admin_test

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/admin"
	"github.com/invoicing-ao/gateway/invoicing"
)

// Once its seconds expire, traffic is read from per-minute summaries, whose
// seconds the what-if estimates (shape's layout): over synthetic bursty
// companies (BenchmarkWhatIfRecordedDay's, busy all six hours: noise as
// large as the limit's rate, at the limit, and syncs), it refuses about as
// many as from the seconds themselves, and more rather than fewer (1.20 ×).
// Busiest first, the estimate was 2.01 ×; spread evenly, 0.74 ×.
func TestWhatIfFromMinuteSummaries(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newShapeWorld(t)
	// The companies' syncs come at times of day: the six hours are the
	// same ones, 06:00 to 12:00 UTC, whenever the test runs, so that it
	// replays the same traffic (within the 48 hours seconds are kept).
	start := w.t0.Truncate(24 * time.Hour).Add(-18 * time.Hour)
	w.clk.Set(start)
	rnd := rand.New(rand.NewPCG(21, 22))
	companies := make([]company, 20)
	for i := range companies {
		companies[i] = newCompany(rnd, i)
		companies[i].open, companies[i].close = 0, 24 // busy all six hours
	}
	for block := range 6 * 6 {
		for sec := block * 600; sec < (block+1)*600; sec++ {
			at := start.Add(time.Duration(sec) * time.Second)
			for _, c := range companies {
				if n := c.at(rnd, at); n > 0 {
					w.src.offer(c.id, invoicing.Live, at, n)
				}
			}
		}
		w.clk.Set(start.Add(time.Duration(block+1) * 10 * time.Minute))
		if err := w.shape.Flush(ctx, &w.src); err != nil {
			t.Fatal(err)
		}
	}
	w.clk.Add(3 * time.Minute)
	if err := w.shape.Flush(ctx, nil); err != nil { // the last block's summaries
		t.Fatal(err)
	}
	ask := func(c company) admin.WhatIfView {
		v, err := w.adm.Limits.WhatIf(ctx, admin.WhatIfQuery{CompanyID: c.id, Mode: "LIVE", Rate: c.rate, Burst: int(2 * c.rate), Since: start, MaxRefused: admin.DefaultMaxRefused})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	seconds := make([]admin.WhatIfView, len(companies))
	for i, c := range companies {
		seconds[i] = ask(c)
	}
	w.clk.Add(4 * 24 * time.Hour) // past the 49 hours after the end of their day
	var fromSeconds, fromMinutes int64
	for i, c := range companies {
		v := ask(c)
		if v.SummarizedSeconds == 0 || v.Offered != seconds[i].Offered {
			t.Fatalf("%s 49 hours later: %d summarized seconds, %d offered (%d before)", c.id, v.SummarizedSeconds, v.Offered, seconds[i].Offered)
		}
		fromSeconds += seconds[i].Proposed.Refused
		fromMinutes += v.Proposed.Refused
	}
	ratio := float64(fromMinutes) / float64(fromSeconds)
	t.Logf("refused from the seconds: %d, from the minute summaries: %d (%.2f ×)", fromSeconds, fromMinutes, ratio)
	if ratio < 1 || ratio > 1.25 {
		t.Errorf("from the minute summaries %.2f × the refusals from the seconds: want 1 to 1.25", ratio)
	}
}
