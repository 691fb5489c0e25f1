package events

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/netip"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
)

// The queue's shared state, read from Redis at scrape time: endpoints by
// state, deliveries due, scheduled and in flight, the oldest due delivery
// of a healthy endpoint (a failing one's are its receiver's delay), the
// watermarks' lag; kept for statsKeep for every instance's scrapes.
func TestQueueStateMetrics(t *testing.T) {
	t.Parallel()
	redises(t, testQueueStateMetrics)
}

// statsFixture is a service on a clock the test moves, its endpoints
// (three of TEST: healthy, failing, disabled; one of LIVE) and the events
// queued so far.
type statsFixture struct {
	t                          *testing.T
	s                          *Service
	reg                        *prometheus.Registry
	clk                        *testenv.Clock
	n                          int
	healthy, failing, disabled Webhook
}

func newStatsFixture(t *testing.T, rdb *redis.Client, prefix string, t0 time.Time) *statsFixture {
	f := &statsFixture{t: t, reg: prometheus.NewRegistry(), clk: testenv.NewClock(t0)}
	s, err := New(Config{Redis: rdb, Prefix: prefix, AllowHTTP: true, AllowedNetworks: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
		Schedule: []time.Duration{time.Hour}, Retention: 2 * time.Hour, Metrics: f.reg, Now: f.clk.Now,
		Logger: slog.New(slog.NewTextHandler(t.Output(), nil))})
	if err != nil {
		t.Fatal(err)
	}
	s.statsKeep = 0
	f.s = s
	endpoint := func(m invoicing.Mode) Webhook {
		ep, _, err := s.CreateWebhook(context.Background(), NewWebhook{CompanyID: testCompany, Mode: m, URL: "http://127.0.0.1:9/hook"})
		if err != nil {
			t.Fatal(err)
		}
		return ep
	}
	f.healthy, f.failing, f.disabled = endpoint(invoicing.Test), endpoint(invoicing.Test), endpoint(invoicing.Test)
	endpoint(invoicing.Live)
	return f
}

// enqueue queues one new event (numbered on from the last) for each of eps.
func (f *statsFixture) enqueue(eps ...Webhook) {
	f.t.Helper()
	var qs []queued
	for _, ep := range eps {
		f.n++
		qs = append(qs, queued{ev: Event{ID: fmt.Sprintf("evt_stats%02d", f.n), Type: ClientCreated, Mode: invoicing.Test, CompanyID: testCompany,
			ResourceID: fmt.Sprintf("11000000-0000-4000-8000-0000000000%02d", f.n), Time: f.clk.Now(), Data: json.RawMessage(`{}`)}, eps: []string{ep.ID}})
	}
	if _, _, err := f.s.q.enqueue(context.Background(), nil, move{}, qs); err != nil {
		f.t.Fatal(err)
	}
}

// build makes, from t0 to t0+30s, the state the test reads: healthy's two
// in flight and two due since t0+20s, failing's two waiting for their
// retry and one due since t0+15s, disabled's one, and two watermarks.
func (f *statsFixture) build(t0 time.Time) {
	t, s, ctx := f.t, f.s, context.Background()
	f.enqueue(f.healthy, f.healthy, f.healthy, f.failing, f.failing, f.disabled)
	off := false
	if _, err := s.UpdateWebhook(ctx, f.disabled.ID, Patch{Enabled: &off}); err != nil {
		t.Fatal(err)
	}
	f.clk.Add(10 * time.Second)
	claims, err := s.q.claim(ctx, 64)
	if err != nil || len(claims) != 5 {
		t.Fatalf("claimed %d (%v), want the 5 deliveries of the enabled endpoints", len(claims), err)
	}
	// failing's two fail (a retry in an hour), one of healthy's succeeds;
	// healthy's other two stay in flight.
	var done []outcome
	okDone := false
	for _, c := range claims {
		switch {
		case c.endpoint == f.failing.ID:
			done = append(done, outcome{c: c, attempt: &Attempt{Error: "answered 500"}})
		case !okDone:
			done, okDone = append(done, outcome{c: c, attempt: &Attempt{Status: 200}, ok: true}), true
		}
	}
	if err := s.q.complete(ctx, done); err != nil {
		t.Fatal(err)
	}
	f.clk.Add(5 * time.Second)
	f.enqueue(f.failing) // due at t0+15s, to an endpoint failing: its receiver's delay
	f.clk.Add(5 * time.Second)
	f.enqueue(f.healthy, f.healthy) // due at t0+20s
	if _, _, err := s.q.enqueue(ctx, nil, move{s.l.watermark(invoicing.Test, "invoices"), "", encodeMark(position(t0.Add(-100*time.Second), "x"))}, nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.q.enqueue(ctx, nil, move{s.l.watermark(invoicing.Test, "overdue"), "", "2026-03-09||"}, nil); err != nil {
		t.Fatal(err)
	}
	f.clk.Add(10 * time.Second) // t0+30s
}

func testQueueStateMetrics(t *testing.T, rdb *redis.Client, prefix string) {
	t0 := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	f := newStatsFixture(t, rdb, prefix, t0)
	f.build(t0)
	want := map[string]float64{
		`gateway_events_endpoints{mode="TEST",state="healthy"}`:              1,
		`gateway_events_endpoints{mode="TEST",state="failing"}`:              1,
		`gateway_events_endpoints{mode="TEST",state="disabled"}`:             1,
		`gateway_events_endpoints{mode="LIVE",state="healthy"}`:              1,
		`gateway_events_endpoints{mode="LIVE",state="failing"}`:              0,
		`gateway_events_endpoints{mode="LIVE",state="disabled"}`:             0,
		`gateway_events_backlog{mode="TEST",state="due"}`:                    3, // healthy's 2, failing's 1
		`gateway_events_backlog{mode="TEST",state="scheduled"}`:              2, // failing's retries
		`gateway_events_backlog{mode="TEST",state="in_flight"}`:              2,
		`gateway_events_backlog{mode="LIVE",state="due"}`:                    0,
		`gateway_events_oldest_due_seconds{mode="TEST"}`:                     10, // healthy's, due at t0+20s; not failing's, at t0+15s
		`gateway_events_oldest_due_seconds{mode="LIVE"}`:                     0,
		`gateway_events_detector_lag_seconds{mode="TEST",stream="invoices"}`: 130,
		// Invoices due on 9 March turned overdue at midnight in Luanda
		// (UTC+1): 23:00 UTC on the 9th, 13 h before t0.
		`gateway_events_detector_lag_seconds{mode="TEST",stream="overdue"}`: 13*3600 + 30,
		`gateway_events_detected_total{mode="TEST",type="client.created"}`:  9,
		`gateway_events_enqueued_total{mode="TEST",type="client.created"}`:  9,
	}
	got := gathered(t, f.reg)
	check := func(got, want map[string]float64) {
		t.Helper()
		for k, v := range want {
			if g, ok := got[k]; !ok || g != v {
				t.Errorf("%s = %v (exists: %v), want %v", k, g, ok, v)
			}
		}
	}
	check(got, want)
	for _, k := range []string{`gateway_events_detector_lag_seconds{mode="TEST",stream="clients"}`, `gateway_events_detector_lag_seconds{mode="LIVE",stream="invoices"}`} {
		if _, ok := got[k]; ok {
			t.Errorf("%s without a watermark", k)
		}
	}

	// Detecting an event again counts nothing.
	f.n = 0
	f.enqueue(f.healthy)
	f.n = 9
	check(gathered(t, f.reg), map[string]float64{`gateway_events_detected_total{mode="TEST",type="client.created"}`: 9})

	// A reading is kept for every scrape within statsKeep of it, then read
	// again (judged by its time: miniredis expires nothing by itself).
	f.s.statsKeep = time.Minute
	check(gathered(t, f.reg), map[string]float64{`gateway_events_backlog{mode="TEST",state="due"}`: 3})
	f.enqueue(f.healthy)
	f.clk.Add(59 * time.Second)
	check(gathered(t, f.reg), map[string]float64{`gateway_events_backlog{mode="TEST",state="due"}`: 3})
	f.clk.Add(time.Second)
	check(gathered(t, f.reg), map[string]float64{`gateway_events_backlog{mode="TEST",state="due"}`: 4})
}
