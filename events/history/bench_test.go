package history

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
)

// The history's benchmarks, on PostgreSQL: Record's throughput, and feed
// pages over a large feed of one company. They report figures (events/s,
// page latencies, bytes on disk per event); the tests assert no timing.
//
//	go test ./events/history -run '^$' -bench Record -benchtime 200x
//	HISTORY_BENCH_ROWS=1000000 go test ./events/history -run '^$' -bench ReadFeed -benchtime 2000x
//
// HISTORY_BENCH_ROWS is the feed's size for BenchmarkReadFeed (default
// 10,000, so that a run of every benchmark once stays quick).

const benchBatch = 500

// BenchmarkRecord records batches of 500 events, each routed to one
// endpoint: of one company, and of 500 companies (one event each).
func BenchmarkRecord(b *testing.B) {
	for _, bc := range []struct {
		name      string
		companies int
	}{{"one_company", 1}, {"many_companies", benchBatch}} {
		b.Run(bc.name, func(b *testing.B) {
			h := openWith(b, testenv.Postgres(b), Config{})
			ctx := context.Background()
			cos := make([]string, bc.companies)
			for i := range cos {
				cos[i] = fmt.Sprintf("0a1b2c3d-0000-4000-8000-%012d", i)
			}
			batch := func(n int) Batch {
				evs := make([]Event, benchBatch)
				for i := range evs {
					id := "evt_" + strconv.Itoa(n) + "_" + strconv.Itoa(i)
					co := cos[i%len(cos)]
					evs[i] = Event{ID: id, CompanyID: co, Mode: invoicing.Live, Type: "invoice.paid", ResourceID: id,
						Body: loadBody(id, "invoice.paid"), Endpoints: []string{"ep_" + co[24:]}}
				}
				return Batch{Move: Move{Mode: invoicing.Live, Stream: "invoices", Old: strconv.Itoa(n - 1), Next: strconv.Itoa(n)}, Events: evs}
			}
			first := batch(0)
			first.Move.Old = ""
			if _, err := h.Record(ctx, first); err != nil { // the partitions, outside the timing
				b.Fatal(err)
			}
			b.ResetTimer()
			for n := 1; n <= b.N; n++ {
				b.StopTimer()
				bt := batch(n)
				h.clock.Add(time.Millisecond)
				b.StartTimer()
				r, err := h.Record(ctx, bt)
				if err != nil || r.Moved || len(r.Deliveries) != benchBatch {
					b.Fatalf("batch %d: %v, moved %v, %d deliveries", n, err, r.Moved, len(r.Deliveries))
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N*benchBatch)/b.Elapsed().Seconds(), "events/s")
		})
	}
}

// benchRows is the feed's size of BenchmarkReadFeed.
func benchRows(b *testing.B) int {
	if v := os.Getenv("HISTORY_BENCH_ROWS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1000 {
			b.Fatalf("HISTORY_BENCH_ROWS=%q: want a number of events, 1000 or more", v)
		}
		return n
	}
	return 10000
}

// BenchmarkReadFeed reads pages of 100 from a feed of one company
// (HISTORY_BENCH_ROWS events over 29 days, beside another company's),
// from cursors spread over it, and reports each page shape's p50 and p99,
// and the bytes on disk per event (table, indexes and TOAST of the events'
// partitions, with the marks'; and the events' alone).
func BenchmarkReadFeed(b *testing.B) {
	rows := benchRows(b)
	h := openWith(b, testenv.Postgres(b), Config{})
	from := t0.Add(-29 * 24 * time.Hour)
	loadFeed(b, h, coA, rows, from, t0)
	loadFeed(b, h, coB, rows/10, from, t0)
	perEvent, eventsOnly := bytesPerEvent(b, h, int64(rows+rows/10))
	b.Logf("%d events of one company: %.0f bytes on disk per event with its mark (%.0f the event alone)", rows, perEvent, eventsOnly)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	cursor := func() *invoicing.FeedPosition {
		at := from.Add(time.Duration(rng.Int64N(int64(29 * 24 * time.Hour))))
		return &invoicing.FeedPosition{Ms: uint64(at.UnixMilli())}
	}
	for _, sh := range []struct {
		name   string
		q      invoicing.FeedQuery
		cursor bool
	}{
		{"oldest_first_page", invoicing.FeedQuery{}, false},
		{"oldest_from_cursor", invoicing.FeedQuery{}, true},
		{"newest_first_page", invoicing.FeedQuery{Newest: true}, false},
		{"newest_from_cursor", invoicing.FeedQuery{Newest: true}, true},
		{"type_from_cursor", invoicing.FeedQuery{Types: []string{"invoice.issued"}}, true},
		{"rare_type_from_cursor", invoicing.FeedQuery{Types: []string{"invoice.cancelled"}}, true},
		{"three_types_newest", invoicing.FeedQuery{Types: []string{"invoice.issued", "client.created", "invoice.cancelled"}, Newest: true}, true},
	} {
		b.Run(sh.name, func(b *testing.B) {
			took := make([]time.Duration, 0, b.N)
			q := sh.q
			q.CompanyID, q.Mode, q.Limit = coA, invoicing.Live, 100
			b.ResetTimer()
			for range b.N {
				if sh.cursor {
					q.After = cursor()
				}
				start := time.Now()
				p, err := h.ReadFeed(ctx, q)
				took = append(took, time.Since(start))
				if err != nil || (len(p.Rows) == 0 && !sh.cursor) {
					b.Fatalf("%+v, %v", p, err)
				}
			}
			b.StopTimer()
			slices.Sort(took)
			b.ReportMetric(ms(took[len(took)/2]), "p50-ms")
			b.ReportMetric(ms(took[min(len(took)-1, len(took)*99/100)]), "p99-ms")
			b.ReportMetric(perEvent, "B/event")
		})
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// bytesPerEvent is what the feed takes on disk per event: every partition
// of events and event_marks (table, indexes, TOAST) over the events; and
// the events' partitions alone.
func bytesPerEvent(b *testing.B, h *harness, events int64) (all, eventsOnly float64) {
	var ev, marks int64
	err := h.db.Pool().QueryRow(context.Background(), `SELECT
  (SELECT sum(pg_total_relation_size(inhrelid)) FROM pg_inherits WHERE inhparent = 'events'::regclass)::bigint,
  (SELECT sum(pg_total_relation_size(inhrelid)) FROM pg_inherits WHERE inhparent = 'event_marks'::regclass)::bigint`).Scan(&ev, &marks)
	if err != nil {
		b.Fatal(err)
	}
	return float64(ev+marks) / float64(events), float64(ev) / float64(events)
}
