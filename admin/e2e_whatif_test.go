package admin_test

import (
	"context"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/invoicing"
	"github.com/invoicing-ao/gateway/tenants"
)

// whatIfAnswer is the what-if's JSON, as a client reads it.
type whatIfAnswer struct {
	CompanyID, Mode string
	From, To        time.Time
	Offered         int64
	Proposed        outcomeAnswer
	Current         outcomeAnswer
	SmallestBurst   struct {
		MaxRefusedShare float64
		Burst           *int
		Refused         int64
		TooFewRequests  bool
	}
	SummarizedSeconds int
	Approximate       []string
}

type outcomeAnswer struct {
	Rate                           float64
	Burst                          int
	Custom, Recorded               bool
	Refused                        int64
	RefusedShare                   float64
	RefusedSeconds, RefusedMinutes int
	WorstMinute                    *struct {
		Start            time.Time
		Refused, Offered int64
	}
}

// adminGet answers a GET of the admin API, decoded into v; it fails the
// test on anything but 200.
func adminGet(t *testing.T, in *instance, path string, v any) {
	t.Helper()
	r := do(t, in.admin.URL, req{Path: path, Header: map[string]string{"Authorization": "Bearer " + in.adminToken}})
	if r.Status != 200 {
		t.Fatalf("GET %s: %d %s", path, r.Status, r.Body)
	}
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("GET %s: %v: %s", path, err, r.Body)
	}
}

// Requests sent to the public API are recorded as the instance records
// them (the limiter's counts, written to Redis), and the admin API replays
// them through a proposed limit and the limit in force, in whichever form
// the window is given; the shape of the same traffic beside the limit; and
// no metric names the company.
func TestWhatIfOfRecordedTraffic(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWorld(t)
	in := w.start()
	k := in.key(t, coA, invoicing.Live, allScopes)
	const sent = 30
	for range sent {
		if r := do(t, in.pub.URL, req{Path: "/api/v1/v1/clients?pageSize=1", Key: k.Key, Company: coA}); r.Status != 200 {
			t.Fatalf("request: %d %s", r.Status, r.Body)
		}
	}
	if err := in.shape.Flush(ctx, in.limiter); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	in.clock.Set(now) // the requests were made on the real clock, after the instance's
	series, err := in.shape.Series(ctx, coA, invoicing.Live, now.Add(-time.Hour), now)
	if err != nil {
		t.Fatal(err)
	}
	want := tenants.Limit{Rate: 1, Burst: 5}.WhatIf(replayable(series))
	if want.Offered != sent || want.Refused == 0 {
		t.Fatalf("recorded %d requests, %d of them refused at 1/s burst 5; want %d sent, some refused", want.Offered, want.Refused, sent)
	}
	// "The last 30 days", as the console asks it, and in hours: the clock is
	// read once, so 30 days is within 30 days.
	for _, since := range []string{"30d", "720h"} {
		var v whatIfAnswer
		adminGet(t, in, "/admin/v1/companies/"+coA+"/limits/whatif?mode=LIVE&rate=1&burst=5&since="+since, &v)
		var sh struct{ From time.Time }
		adminGet(t, in, "/admin/v1/companies/"+coA+"/limits/shape?mode=LIVE&since="+since, &sh)
		if v.Offered != sent || !v.From.Equal(sh.From) || in.clock.Now().Sub(v.From) > 30*24*time.Hour+time.Second {
			t.Errorf("since %s: from %v (shape from %v), %d offered", since, v.From, sh.From, v.Offered)
		}
	}
	for _, since := range []string{"1h", "90m", now.Add(-time.Hour).UTC().Format(time.RFC3339), escapePlus(now.Add(-time.Hour).Format(time.RFC3339Nano)), now.UTC().Format(time.DateOnly)} {
		var v whatIfAnswer
		adminGet(t, in, "/admin/v1/companies/"+coA+"/limits/whatif?mode=live&rate=1&burst=5&since="+since, &v)
		p, c := v.Proposed, v.Current
		if v.CompanyID != coA || v.Mode != "LIVE" || v.Offered != sent || v.SummarizedSeconds != 0 || v.To.Before(now.Truncate(time.Second)) {
			t.Errorf("since %s: %+v", since, v)
		}
		if p.Rate != 1 || p.Burst != 5 || p.Custom || p.Refused != want.Refused || p.RefusedSeconds != want.RefusedSeconds ||
			p.RefusedShare != float64(want.Refused)/sent || p.WorstMinute == nil || !p.WorstMinute.Start.Equal(want.WorstMinute) || p.WorstMinute.Refused != want.WorstMinuteRefused {
			t.Errorf("since %s: proposed %+v, want %+v", since, p, want)
		}
		if c.Rate != 1000 || c.Burst != 1000 || c.Custom || !c.Recorded || c.Refused != 0 || c.WorstMinute != nil {
			t.Errorf("since %s: in force %+v, want the default 1000/1000 refusing none", since, c)
		}
		// No smallest burst is looked for in 30 requests: too few to say.
		b := v.SmallestBurst
		if b.MaxRefusedShare != 0.001 || b.Burst != nil || !b.TooFewRequests {
			t.Errorf("since %s: smallest burst %+v", since, b)
		}
	}
	var test whatIfAnswer
	adminGet(t, in, "/admin/v1/companies/"+coA+"/limits/whatif?mode=TEST&rate=1&burst=1&maxRefused=0.5", &test)
	if test.Offered != 0 || test.Proposed.Refused != 0 || test.SmallestBurst.MaxRefusedShare != 0.5 || !test.From.Equal(now.Add(-24*time.Hour).Truncate(time.Second)) {
		t.Errorf("TEST, over the default 24 hours: %+v", test)
	}
	recordedShape(t, in, now, sent, slices.Max(series.Counts))
	noMetricNamesCompany(t, in)
}

// recordedShape: the shape of the sent requests recorded until now, the
// busiest second top, is beside the default limit.
func recordedShape(t *testing.T, in *instance, now time.Time, sent int64, top uint32) {
	t.Helper()
	var sh struct {
		CompanyID, Mode string
		Limit           struct {
			Rate   float64
			Burst  int
			Custom bool
		}
		Window struct {
			Requests      int64
			BusySeconds   int
			P50, P99, Max uint32
		}
		Hours []struct {
			Start    time.Time
			Requests int64
			Max      uint32
		}
	}
	adminGet(t, in, "/admin/v1/companies/"+coA+"/limits/shape?mode=LIVE", &sh)
	if sh.CompanyID != coA || sh.Mode != "LIVE" || sh.Limit.Rate != 1000 || sh.Limit.Burst != 1000 || sh.Limit.Custom ||
		sh.Window.Requests != sent || sh.Window.Max != top || sh.Window.BusySeconds < 1 || sh.Window.P50 < 1 {
		t.Errorf("shape: %+v, want %d requests, the busiest second %d", sh, sent, top)
	}
	var inHours int64
	for _, h := range sh.Hours {
		inHours += h.Requests
	}
	if n := len(sh.Hours); n < 24 || inHours != sent || !sh.Hours[n-1].Start.Equal(now.UTC().Truncate(time.Hour)) {
		t.Errorf("shape's hours: %d holding %d requests, the last %+v", n, inHours, sh.Hours[n-1])
	}
}

// noMetricNamesCompany: Prometheus keeps its cardinality, no series names
// a company.
func noMetricNamesCompany(t *testing.T, in *instance) {
	t.Helper()
	r := do(t, in.admin.URL, req{Path: "/metrics"})
	if r.Status != 200 {
		t.Fatalf("/metrics: %d", r.Status)
	}
	if m := regexp.MustCompile(`(?m)^[a-z_]+\{[^}]*(company\w*="|"` + coA + `")`).Find(r.Body); m != nil || strings.Contains(string(r.Body), coA) {
		t.Errorf("a metric names the company: %s", m)
	}
}

// escapePlus is s with its + escaped, as a query's value.
func escapePlus(s string) string { return strings.ReplaceAll(s, "+", "%2B") }

// Recorded traffic of three companies, two blocks ago: the what-if's
// refusals to the request and minute, and the companies nearest their
// limit and far below it, on the admin API.
func TestWhatIfAndHeadroomOnTheAdminAPI(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWorld(t)
	in := w.start()
	t0 := time.Now().Truncate(10 * time.Minute).Add(-20 * time.Minute)
	in.clock.Set(t0.Add(3 * time.Minute))
	var src recorder
	record := func(company string, counts []int) {
		for i, n := range counts {
			if n > 0 {
				src.offer(company, invoicing.Live, t0.Add(time.Duration(i)*time.Second), n)
			}
		}
	}
	record(coA, bursty())
	record(coB, []int{2, 2, 1, 0, 2})
	record(coS, []int{9, 10, 10, 8})
	if err := in.shape.Flush(ctx, &src); err != nil {
		t.Fatal(err)
	}
	for co, lim := range map[string]tenants.Limit{coA: {Rate: 50, Burst: 100}, coB: {Rate: 50, Burst: 100}, coS: {Rate: 10, Burst: 10}} {
		if err := in.limiter.SetLimit(ctx, co, invoicing.Live, lim); err != nil {
			t.Fatal(err)
		}
	}
	var v whatIfAnswer
	since := t0.Add(-time.Hour).UTC().Format(time.RFC3339)
	adminGet(t, in, "/admin/v1/companies/"+coA+"/limits/whatif?mode=LIVE&rate=20&burst=40&since="+since, &v)
	// As TestWhatIf: 122 refused in 4 seconds of 2 minutes, 81 of them in
	// the third minute.
	p := v.Proposed
	if v.Offered != 2040 || p.Refused != 122 || p.RefusedSeconds != 4 || p.RefusedMinutes != 2 || p.WorstMinute == nil ||
		!p.WorstMinute.Start.Equal(t0.Add(2*time.Minute)) || p.WorstMinute.Refused != 81 || p.WorstMinute.Offered != 750 {
		t.Errorf("proposed: %+v, worst minute %+v", p, p.WorstMinute)
	}
	if c := v.Current; c.Rate != 50 || c.Burst != 100 || !c.Custom || c.Refused != 0 {
		t.Errorf("in force: %+v", c)
	}

	// Headroom reads the blocks summarized, two minutes after they end.
	in.clock.Set(t0.Add(12*time.Minute + time.Second))
	if err := in.shape.Flush(ctx, nil); err != nil {
		t.Fatal(err)
	}
	var h struct {
		Mode      string
		Companies int
		Nearest   []struct {
			CompanyID string
			P99       int
			Limit     struct{ Rate float64 }
			Share     float64
		}
		FarBelow []struct {
			CompanyID string
			Share     float64
		}
	}
	adminGet(t, in, "/admin/v1/limits/headroom?top=1", &h)
	if h.Mode != "LIVE" || h.Companies != 3 || len(h.Nearest) != 1 || h.Nearest[0].CompanyID != coA || h.Nearest[0].P99 != 63 || h.Nearest[0].Share != 63.0/50 {
		t.Errorf("nearest: %+v", h)
	}
	if len(h.FarBelow) != 1 || h.FarBelow[0].CompanyID != coB || h.FarBelow[0].Share != 2.0/50 {
		t.Errorf("far below: %+v", h.FarBelow)
	}
	adminGet(t, in, "/admin/v1/limits/headroom?mode=TEST", &h)
	if h.Mode != "TEST" || h.Companies != 0 || len(h.Nearest) != 0 || len(h.FarBelow) != 0 {
		t.Errorf("TEST: %+v", h)
	}
}

// A query the admin API cannot answer is refused naming every parameter
// at fault at once, those it cannot read and those out of range alike.
func TestWhatIfRefusesBadQueries(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	in := w.start()
	whatif := "/admin/v1/companies/" + coA + "/limits/whatif"
	future := escapePlus(in.clock.Now().Add(time.Hour).Format(time.RFC3339))
	for _, c := range []struct {
		path   string
		fields string // the fields named, sorted
	}{
		{whatif, "burst mode rate"},
		{whatif + "?mode=PROD&rate=fast&burst=1.5&since=yesterday&maxRefused=2", "burst maxRefused mode rate since"},
		{whatif + "?mode=LIVE&rate=0&burst=0", "burst rate"},
		{whatif + "?mode=LIVE&rate=NaN&burst=100001", "burst rate"},
		{whatif + "?mode=LIVE&rate=1&burst=1&since=31d", "since"},
		{whatif + "?mode=LIVE&rate=1&burst=1&since=-1h", "since"},
		{whatif + "?mode=LIVE&rate=1&burst=1&since=" + future, "since"},
		{whatif + "?mode=LIVE&rate=1&burst=1&maxRefused=1", "maxRefused"},
		{whatif + "?mode=LIVE&rate=1&burst=1&colour=red", "colour"},
		{whatif + "?mode=LIVE&mode=TEST&rate=1&burst=1", "mode"},
		{"/admin/v1/companies/" + coA + "/limits/shape", "mode"},
		{"/admin/v1/companies/" + coA + "/limits/shape?mode=TEST&since=2020-01-01", "since"},
		{"/admin/v1/limits/headroom?top=0", "top"},
		{"/admin/v1/limits/headroom?mode=prod&top=ten", "mode top"},
	} {
		r := do(t, in.admin.URL, req{Path: c.path, Header: map[string]string{"Authorization": "Bearer " + in.adminToken}})
		m := expectProblem(t, r, 400, "invalid_parameter")
		var fields []string
		for _, e := range m["errors"].([]any) {
			f := e.(map[string]any)
			if msg, _ := f["message"].(string); msg == "" {
				t.Errorf("%s: %v has no message", c.path, f)
			}
			fields = append(fields, f["field"].(string))
		}
		slices.Sort(fields)
		if got := strings.Join(fields, " "); got != c.fields {
			t.Errorf("%s: fields %q, want %q: %s", c.path, got, c.fields, r.Body)
		}
	}
	for _, co := range []string{"acme", "0a5e7c1e-0000-4000-8000-0000000000ff"} {
		r := do(t, in.admin.URL, req{Path: "/admin/v1/companies/" + co + "/limits/whatif?mode=LIVE&rate=1&burst=1",
			Header: map[string]string{"Authorization": "Bearer " + in.adminToken}})
		expectProblem(t, r, 422, "unknown_company")
	}
}
