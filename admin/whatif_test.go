package admin_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/admin"
	"github.com/invoicing-ao/gateway/backend/gendata"
	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
	"github.com/invoicing-ao/gateway/shape"
	"github.com/invoicing-ao/gateway/tenants"
	"github.com/invoicing-ao/gateway/web"
)

// coS is a third company (the demo's suspended one: the recording is
// Redis's, and knows no statuses).
const coS = gendata.DemoCompanySuspended

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// recorder is a shape.Source the test fills, second by second.
type recorder struct {
	mu     sync.Mutex
	counts []recorded
}

type recorded struct {
	company string
	mode    invoicing.Mode
	sec     int64
	n       int
}

func (r *recorder) offer(company string, m invoicing.Mode, at time.Time, n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.counts = append(r.counts, recorded{company, m, at.Unix(), n})
}

func (r *recorder) TakeOffered(yield func(string, invoicing.Mode, int64, int, int, []uint16)) {
	r.mu.Lock()
	counts := r.counts
	r.counts = nil
	r.mu.Unlock()
	for _, c := range counts {
		yield(c.company, c.mode, c.sec, c.n, 0, nil)
	}
}

// shapeWorld is the administration over a limiter and a traffic recording
// on the real Redis, on a clock the test moves (near the real time: Redis
// expires the recording by its own).
type shapeWorld struct {
	clk     *testenv.Clock
	t0      time.Time // the start of a block, two blocks ago
	limiter *tenants.Limiter
	shape   *shape.Store
	src     recorder
	adm     *admin.Service
}

func newShapeWorld(t *testing.T) *shapeWorld {
	rdb, prefix := testenv.Redis(t)
	w := &shapeWorld{t0: time.Now().Truncate(10 * time.Minute).Add(-20 * time.Minute)}
	w.clk = testenv.NewClock(w.t0)
	w.limiter = tenants.New(tenants.Config{Redis: rdb, Prefix: prefix + "tenants:", Logger: quietLog()})
	w.shape = shape.New(shape.Config{Redis: rdb, Prefix: prefix + "shape:", Now: w.clk.Now, Logger: quietLog()})
	w.adm = admin.New(admin.Config{Limiter: w.limiter, Shape: w.shape, Now: w.clk.Now, Logger: quietLog()})
	return w
}

// record offers counts[i] requests in the second t0+i, and flushes them.
func (w *shapeWorld) record(t *testing.T, company string, m invoicing.Mode, counts []int) {
	t.Helper()
	for i, n := range counts {
		if n > 0 {
			w.src.offer(company, m, w.t0.Add(time.Duration(i)*time.Second), n)
		}
	}
	if err := w.shape.Flush(context.Background(), &w.src); err != nil {
		t.Fatal(err)
	}
}

// bursty is three minutes of 10 requests a second, but 100 in second 60
// and 60 in each of seconds 150 to 152.
func bursty() []int {
	c := make([]int, 180)
	for i := range c {
		c[i] = 10
	}
	c[60] = 100
	c[150], c[151], c[152] = 60, 60, 60
	return c
}

func TestWhatIf(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newShapeWorld(t)
	w.clk.Set(w.t0.Add(3 * time.Minute))
	w.record(t, coA, invoicing.Live, bursty())
	if err := w.limiter.SetLimit(ctx, coA, invoicing.Live, tenants.Limit{Rate: 50, Burst: 100}); err != nil {
		t.Fatal(err)
	}
	v, err := w.adm.Limits.WhatIf(ctx, admin.WhatIfQuery{CompanyID: coA, Mode: "live", Rate: 20, Burst: 40, Since: w.t0.Add(-time.Hour), MaxRefused: admin.DefaultMaxRefused})
	if err != nil {
		t.Fatal(err)
	}
	if v.Offered != 2040 || !v.From.Equal(w.t0.Add(-time.Hour)) || !v.To.Equal(w.t0.Add(3*time.Minute)) || v.Mode != "LIVE" || v.SummarizedSeconds != 0 || len(v.Approximate) != 0 {
		t.Errorf("window: %+v", v)
	}
	// At 20/s burst 40, the second of 100 loses 41 (TestWhatIf in
	// tenants); of the three of 60, the first loses 1 and the others 40
	// each, what the rate does not refill.
	p := v.Proposed
	minute2 := w.t0.Add(2 * time.Minute)
	if p.Refused != 122 || p.RefusedSeconds != 4 || p.RefusedMinutes != 2 ||
		p.WorstMinute == nil || !p.WorstMinute.Start.Equal(minute2) || p.WorstMinute.Refused != 81 || p.WorstMinute.Offered != 750 {
		t.Errorf("proposed: %+v, worst minute %+v", p, p.WorstMinute)
	}
	if c := v.Current; c.Rate != 50 || c.Burst != 100 || !c.Custom || c.Refused != 0 || c.WorstMinute != nil {
		t.Errorf("current: %+v", c)
	}
	b := v.SmallestBurst
	if b.Burst == nil || float64(b.Refused) > admin.DefaultMaxRefused*2040 || b.MaxRefusedShare != admin.DefaultMaxRefused {
		t.Fatalf("smallest burst: %+v", b)
	}
	series, _ := w.shape.Series(ctx, coA, invoicing.Live, v.From, v.To)
	if less := (tenants.Limit{Rate: 20, Burst: *b.Burst - 1}).WhatIf(replayable(series)); float64(less.Refused) <= admin.DefaultMaxRefused*2040 {
		t.Errorf("burst %d is the smallest found, but %d refuses only %d", *b.Burst, *b.Burst-1, less.Refused)
	}
	// Another mode's traffic is its own: none recorded in TEST.
	if v, err := w.adm.Limits.WhatIf(ctx, admin.WhatIfQuery{CompanyID: coA, Mode: "TEST", Rate: 1, Burst: 1, Since: w.t0}); err != nil || v.Offered != 0 || v.Current.Rate != 10 || v.Current.Custom {
		t.Errorf("TEST: %+v, %v", v, err)
	}
}

func TestWhatIfRefusesWhatItCannotAnswer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newShapeWorld(t)
	since := w.t0.Add(-time.Hour)
	for _, tc := range []struct {
		name   string
		q      admin.WhatIfQuery
		code   string
		fields []string
	}{
		{"everything wrong", admin.WhatIfQuery{CompanyID: coA, Mode: "PROD", Rate: 0, Burst: 0, Since: w.t0.Add(-31 * 24 * time.Hour), MaxRefused: 1},
			"invalid_parameter", []string{"mode", "since", "rate", "burst", "maxRefused"}},
		{"since in the future", admin.WhatIfQuery{CompanyID: coA, Mode: "LIVE", Rate: 1, Burst: 1, Since: w.t0.Add(time.Minute)}, "invalid_parameter", []string{"since"}},
		{"rate too high", admin.WhatIfQuery{CompanyID: coA, Mode: "LIVE", Rate: 1e6, Burst: 1, Since: since}, "invalid_parameter", []string{"rate"}},
		{"not a company id", admin.WhatIfQuery{CompanyID: "acme", Mode: "LIVE", Rate: 1, Burst: 1, Since: since}, "unknown_company", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := w.adm.Limits.WhatIf(ctx, tc.q)
			pr := web.Problem(err)
			var fields []string
			for _, f := range pr.Fields {
				fields = append(fields, f.Field)
			}
			if pr.Code != tc.code || len(fields) != len(tc.fields) || (len(fields) > 0 && fmt.Sprint(fields) != fmt.Sprint(tc.fields)) {
				t.Errorf("%v: code %q, fields %v; want %q, %v", err, pr.Code, fields, tc.code, tc.fields)
			}
		})
	}
	unrecorded := admin.New(admin.Config{Limiter: w.limiter, Logger: quietLog()})
	if _, err := unrecorded.Limits.WhatIf(ctx, admin.WhatIfQuery{CompanyID: coA, Mode: "LIVE", Rate: 1, Burst: 1, Since: time.Now().Add(-time.Hour)}); web.Problem(err).Code != "usage_unavailable" {
		t.Errorf("without a recording: %v", err)
	}
}

// The shape of a company's traffic beside its limit, and the companies
// nearest their limit or far below it.
func TestTrafficShapeAndHeadroom(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newShapeWorld(t)
	w.clk.Set(w.t0.Add(3 * time.Minute))
	w.record(t, coA, invoicing.Live, bursty())
	w.record(t, coB, invoicing.Live, []int{2, 2, 1, 0, 2})
	w.record(t, coS, invoicing.Live, []int{9, 10, 10, 8})
	if err := w.limiter.SetLimit(ctx, coS, invoicing.Live, tenants.Limit{Rate: 10, Burst: 10}); err != nil {
		t.Fatal(err)
	}
	v, err := w.adm.Limits.TrafficShape(ctx, coA, "LIVE", w.t0.Add(-30*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	// 180 busy seconds: 176 of 10, 3 of 60 and 1 of 100.
	if v.Window.Requests != 2040 || v.Window.BusySeconds != 180 || v.Window.P50 != 10 || v.Window.P99 != 60 || v.Window.Max != 100 {
		t.Errorf("window: %+v", v.Window)
	}
	if v.Limit != (admin.LimitView{Rate: 50, Burst: 100}) || len(v.Hours) == 0 || v.Hours[len(v.Hours)-1].Requests != 2040 {
		t.Errorf("limit %+v, hours %+v", v.Limit, v.Hours)
	}
	// Before their blocks are summarized, the companies rank by their
	// seconds so far; with room for ten in each list, the one far below its
	// limit is in that list only.
	early, err := w.adm.Limits.LimitHeadroom(ctx, "LIVE", 10)
	if err != nil || early.Companies != 3 || len(early.Nearest) != 2 || len(early.FarBelow) != 1 || early.FarBelow[0].CompanyID != coB {
		t.Errorf("headroom of the running blocks, ten of each: %+v, %v", early, err)
	}
	// The blocks are summarized two minutes after they end: then the
	// companies rank by their p99 busy second over their limit's rate.
	w.clk.Set(w.t0.Add(10*time.Minute + 2*time.Minute + time.Second))
	if err := w.shape.Flush(ctx, nil); err != nil {
		t.Fatal(err)
	}
	h, err := w.adm.Limits.LimitHeadroom(ctx, "LIVE", 2)
	if err != nil {
		t.Fatal(err)
	}
	// A's p99 busy second, 60, is in the class of 60 to 63 (63/50); the
	// third company's 10, at its own limit of 10/s.
	if h.Companies != 3 || len(h.Nearest) != 2 || h.Nearest[0].CompanyID != coA || h.Nearest[0].P99 != 63 || h.Nearest[0].Share != 63.0/50 ||
		h.Nearest[1].CompanyID != coS || h.Nearest[1].Share != 1 || !h.Nearest[1].Limit.Custom {
		t.Errorf("nearest: %+v", h)
	}
	if len(h.FarBelow) != 1 || h.FarBelow[0].CompanyID != coB || h.FarBelow[0].Share != 2.0/50 {
		t.Errorf("far below: %+v", h.FarBelow)
	}
}

// replayable is a series as the what-if replays it.
func replayable(sr shape.Series) tenants.Traffic {
	tr := tenants.Traffic{Start: sr.Start, Counts: sr.Counts}
	for _, u := range sr.Uneven {
		tr.Uneven = append(tr.Uneven, tenants.Uneven(u))
	}
	for _, r := range sr.Refused {
		tr.Refused = append(tr.Refused, tenants.Refused(r))
	}
	return tr
}
