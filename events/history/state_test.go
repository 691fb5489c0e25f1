package history

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/internal/sqldb"
	"github.com/invoicing-ao/gateway/invoicing"
)

func testTestAndPending(t *testing.T, open opener) {
	h := open(t, Config{})
	ctx := context.Background()
	body := []byte(`{"type":"webhook.test","data":{"endpointId":"ep1"}}`)
	qd, err := h.AddTest(ctx, TestDelivery{CompanyID: coA, Mode: invoicing.Test, EndpointID: "ep1", EventID: "t1", Type: "webhook.test", ResourceID: "ep1", Body: body})
	if err != nil || qd != (Queued{coA, "ep1", "t1", t0.UnixMilli(), t0.UnixMilli()}) {
		t.Fatalf("AddTest: %+v, %v", qd, err)
	}
	f, err := h.Fetch(ctx, []DeliveryKey{{coA, "ep1", "t1"}})
	if err != nil || !f[0].Found || string(f[0].Body) != string(body) || f[0].Mode != invoicing.Test || f[0].Type != "webhook.test" {
		t.Errorf("the test delivery: %+v, %v", f, err)
	}
	if p, _ := h.ReadFeed(ctx, invoicing.FeedQuery{CompanyID: coA, Mode: invoicing.Test, Limit: 10}); len(p.Rows) != 0 {
		t.Errorf("a test delivery is in the feed: %+v", p.Rows)
	}
	if p, err := h.Log(ctx, LogQuery{CompanyID: coA, EndpointID: "ep1", Type: "webhook.test"}); err != nil || len(p.Deliveries) != 1 {
		t.Errorf("the log's test deliveries: %+v, %v", p, err)
	}
	// Pending: every delivery still to make, once each, by queueing.
	h.clock.Add(time.Millisecond)
	record(t, h, Batch{Events: []Event{ev(coA, "a", "invoice.paid", "ep1", "ep2"), ev(coB, "b", "invoice.paid", "ep3")}})
	h.clock.Add(time.Millisecond)
	record(t, h, Batch{Events: []Event{ev(coA, "c", "invoice.paid", "ep1"), ev(coA, "d", "invoice.paid", "ep1")}})
	complete(t, h, Outcome{DeliveryKey: DeliveryKey{coA, "ep1", "c"}, Attempt: attempt(h, 200, ""), State: Delivered})
	var got []string
	var after *Queued
	for range 10 {
		page, err := h.Pending(ctx, after, 2)
		if err != nil {
			t.Fatal(err)
		}
		for _, qd := range page {
			got = append(got, qd.EndpointID+"/"+qd.EventID)
		}
		if len(page) < 2 {
			break
		}
		after = &page[len(page)-1]
	}
	want := []string{"ep1/t1", "ep1/a", "ep2/a", "ep3/b", "ep1/d"}
	if !same(got, want) {
		t.Errorf("pending %v, want %v", got, want)
	}
	h.clock.Add(8 * 24 * time.Hour) // past the retention: none
	if page, err := h.Pending(ctx, nil, 10); err != nil || len(page) != 0 {
		t.Errorf("pending past the retention: %v, %v", page, err)
	}
}

func testWatermarks(t *testing.T, open opener) {
	h := open(t, Config{})
	ctx := context.Background()
	if err := h.SetWatermarks(ctx, invoicing.Live, map[string]string{"invoices": "1|a", "clients": "2|b"}); err != nil {
		t.Fatal(err)
	}
	if err := h.SetWatermarks(ctx, invoicing.Test, map[string]string{"invoices": "9|z"}); err != nil {
		t.Fatal(err)
	}
	if err := h.Rewind(ctx, invoicing.Live, "invoices", "overdue"); err != nil {
		t.Fatal(err)
	}
	m, err := h.Watermarks(ctx, invoicing.Live)
	if err != nil || fmt.Sprint(m) != "map[clients:2|b invoices:rewind overdue:rewind]" {
		t.Errorf("LIVE's watermarks: %v, %v", m, err)
	}
	if m, _ := h.Watermarks(ctx, invoicing.Test); fmt.Sprint(m) != "map[invoices:9|z]" {
		t.Errorf("TEST's watermarks: %v", m)
	}
	// A detector moves on from the rewind by compare-and-set.
	mv := Move{Mode: invoicing.Live, Stream: "invoices", Old: Rewind, Next: "3|c"}
	if r := record(t, h, Batch{Move: mv}); r.Moved {
		t.Error("a move from rewind was refused")
	}
	if r := record(t, h, Batch{Move: mv}); !r.Moved {
		t.Error("a second move from rewind was taken")
	}
	if err := h.SetWatermarks(ctx, invoicing.Live, map[string]string{"invoices": ""}); err == nil {
		t.Error("an empty watermark was set")
	}
}

// testMaintenance runs maintenance with the clock moved past each window:
// on PostgreSQL partitions are made ahead and dropped behind (as pg_inherits
// says), on SQLite rows are deleted; on both, what is within its window
// stays and the feeds' sizes follow.
func testMaintenance(t *testing.T, open opener) {
	cfg := Config{FeedWindow: 10 * 24 * time.Hour, Retention: 2 * 24 * time.Hour, Remember: 20 * 24 * time.Hour, Deletes: sqldb.Batches{Size: 3}}
	h := open(t, cfg)
	ctx := context.Background()
	m, err := h.Maintain(ctx)
	if err != nil || m.Busy {
		t.Fatal(m, err)
	}
	if h.db.Engine() == sqldb.Postgres {
		// From each window's start to two days ahead (the default).
		day := func(d int) string { return t0.AddDate(0, 0, d).Format("20060102") }
		parts := partitions(t, h, "events")
		if !strings.Contains(parts, "events_"+day(-10)) || !strings.Contains(parts, "events_"+day(2)) || strings.Contains(parts, "events_"+day(3)) {
			t.Errorf("events' partitions: %s", parts)
		}
		if parts := partitions(t, h, "deliveries"); strings.Count(parts, " ") != 4 || !strings.Contains(parts, "deliveries_"+day(2)) {
			t.Errorf("deliveries' partitions: %s", parts)
		}
		if parts := partitions(t, h, "event_marks"); !strings.Contains(parts, "event_marks_") {
			t.Errorf("marks' partitions: %s", parts)
		}
	}
	record(t, h, Batch{Events: []Event{ev(coA, "a0", "invoice.paid", "ep1"), ev(coA, "a1", "invoice.paid", "ep1"), ev(coB, "b0", "invoice.paid")}})
	complete(t, h, Outcome{DeliveryKey: DeliveryKey{coA, "ep1", "a0"}, Attempt: attempt(h, 500, "x"), State: Failed})
	h.clock.Add(5 * 24 * time.Hour)
	record(t, h, Batch{Events: []Event{ev(coA, "c0", "invoice.paid", "ep1")}})
	if st, _ := h.Stats(ctx, 5); st.Events != 4 || st.Feeds != 2 || st.Largest[0].CompanyID != coA || st.Largest[0].Events != 3 {
		t.Errorf("stats before: %+v", st)
	}
	// Day 11: the first events are past the feed's window, their deliveries
	// past the retention; the later event's delivery too (5 days > 2).
	h.clock.Add(6 * 24 * time.Hour)
	for i := 0; ; i++ {
		if m, err = h.Maintain(ctx); err != nil {
			t.Fatal(err)
		}
		if m.Deleted < 9 || i > 10 { // SQLite: 3 rows a batch, 100 batches a call at most
			break
		}
	}
	if h.db.Engine() == sqldb.Postgres {
		if parts := partitions(t, h, "events"); strings.Contains(parts, "events_"+t0.Format("20060102")) || !strings.Contains(parts, t0.AddDate(0, 0, 5).Format("20060102")) {
			t.Errorf("events' partitions after: %s", parts)
		}
		dropped := strings.Join(m.Dropped, " ")
		for _, p := range []string{"events_20260310", "deliveries_20260310", "deliveries_20260315", "delivery_attempts_20260310"} {
			if !strings.Contains(dropped, p) {
				t.Errorf("dropped %v, want %s among them", m.Dropped, p)
			}
		}
		if strings.Contains(dropped, "events_20260315") {
			t.Errorf("dropped %v: within their windows", m.Dropped)
		}
	}
	if n := count(t, h, "events"); n != 1 {
		t.Errorf("%d events kept, want c0", n)
	}
	if n := count(t, h, "deliveries") + count(t, h, "delivery_attempts"); n != 0 {
		t.Errorf("%d deliveries and attempts kept past the retention", n)
	}
	if n := count(t, h, "event_marks"); n != 4 {
		t.Errorf("%d marks kept, want all 4 (Remember is 20 days)", n)
	}
	st, err := h.Stats(ctx, 5)
	if err != nil || st.Events != 1 || st.Feeds != 2 || st.Largest[0].Events != 1 || st.Largest[1].Events != 0 {
		t.Errorf("stats after: %+v, %v", st, err)
	}
	// Maintaining again changes nothing.
	if m, err := h.Maintain(ctx); err != nil || len(m.Dropped) != 0 || m.Deleted != 0 {
		t.Errorf("again: %+v, %v", m, err)
	}
	if st2, _ := h.Stats(ctx, 5); fmt.Sprint(st2) != fmt.Sprint(st) {
		t.Errorf("stats after maintaining again: %+v, want %+v", st2, st)
	}
}

// partitions is what pg_inherits says a table's partitions are.
func partitions(t *testing.T, h *harness, table string) string {
	t.Helper()
	rows, err := h.db.Pool().Query(context.Background(), `SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
WHERE i.inhparent = $1::text::regclass ORDER BY c.relname`, table)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		out = append(out, n)
	}
	return strings.Join(out, " ")
}

func count(t *testing.T, h *harness, table string) int64 {
	t.Helper()
	var n int64
	if err := sqldb.QueryRow(context.Background(), h.db.Read(), "SELECT count(*) FROM "+table, nil, &n); err != nil {
		t.Fatal(err)
	}
	return n
}
