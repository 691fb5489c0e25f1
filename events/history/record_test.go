package history

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/invoicing"
)

func testRecordComparesAndSets(t *testing.T, open opener) {
	h := open(t, Config{})
	ctx := context.Background()
	mv := func(old, next string) Move {
		return Move{Mode: invoicing.Live, Stream: "invoices", Old: old, Next: next}
	}
	r := record(t, h, Batch{Move: mv("", "m1"), Events: []Event{ev(coA, "e1", "invoice.paid", "ep1")}})
	if r.Moved || fmt.Sprint(r.New) != "[true]" || len(r.Deliveries) != 1 {
		t.Fatalf("first step: %+v", r)
	}
	// A detector that read the watermark before that step: moved, and
	// nothing of its batch is written.
	stale := Batch{Move: mv("", "m1b"), Events: []Event{ev(coA, "e2", "invoice.paid", "ep1")}}
	if r := record(t, h, stale); !r.Moved || len(r.New) != 0 || len(r.Deliveries) != 0 {
		t.Errorf("a stale step: %+v, want moved and nothing else", r)
	}
	if r := record(t, h, Batch{Move: mv("m0", "m2"), Events: stale.Events}); !r.Moved {
		t.Errorf("a step from a watermark never held: %+v, want moved", r)
	}
	if got := walk(t, h, feedQuery(coA, 10)); !same(got, []string{"e1"}) {
		t.Errorf("the feed after the refused steps: %v, want only e1", got)
	}
	if d, err := h.Fetch(ctx, []DeliveryKey{{coA, "ep1", "e2"}}); err != nil || d[0].Found {
		t.Errorf("a refused step's delivery: %+v, %v; want none", d, err)
	}
	// From the watermark held: recorded, and e2 is new (never marked).
	if r := record(t, h, Batch{Move: mv("m1", "m2"), Events: stale.Events}); r.Moved || !r.New[0] || len(r.Deliveries) != 1 {
		t.Errorf("the step from m1: %+v", r)
	}
	// The sweep moves no watermark: never refused.
	if r := record(t, h, Batch{Events: []Event{ev(coA, "e3", "invoice.paid")}}); r.Moved || !r.New[0] {
		t.Errorf("the sweep's step: %+v", r)
	}
	// A step with no events still moves its watermark.
	if r := record(t, h, Batch{Move: mv("m2", "m3")}); r.Moved {
		t.Errorf("an empty step: %+v", r)
	}
	marks, err := h.Watermarks(ctx, invoicing.Live)
	if err != nil || marks["invoices"] != "m3" || len(marks) != 1 {
		t.Errorf("watermarks: %v, %v; want invoices at m3", marks, err)
	}
	if marks, _ := h.Watermarks(ctx, invoicing.Test); len(marks) != 0 {
		t.Errorf("TEST's watermarks: %v, want none: modes are apart", marks)
	}
}

// testRecordConcurrent has two writers record batches of one feed at once
// while a reader walks it: the reader never sees an event before one
// recorded earlier is visible (its walk, from cursor to cursor, ends with
// every event once, in order), which holds only if positions are taken in
// commit order.
func testRecordConcurrent(t *testing.T, open opener) {
	h := open(t, Config{})
	ctx := context.Background()
	const writers, batches, per = 2, 30, 10
	var wg sync.WaitGroup
	errs := make(chan error, writers+1)
	stop := make(chan struct{})
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range batches {
				evs := events(coA, fmt.Sprintf("w%d-%d-", w, b), per)
				if _, err := h.Record(ctx, Batch{Events: evs}); err != nil {
					errs <- err
					return
				}
				h.clock.Add(time.Millisecond / 4) // several batches share a millisecond
			}
		}()
	}
	seen := map[string]bool{}
	var order []invoicing.FeedPosition
	q := feedQuery(coA, 7)
	read := func() error {
		p, err := h.ReadFeed(ctx, q)
		if err != nil {
			return err
		}
		for _, r := range p.Rows {
			if seen[r.EventID] {
				return fmt.Errorf("%s read twice", r.EventID)
			}
			seen[r.EventID] = true
			order = append(order, r.Position)
		}
		q.After = p.Next
		return nil
	}
	var rd sync.WaitGroup
	rd.Add(1)
	go func() {
		defer rd.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := read(); err != nil {
				errs <- err
				return
			}
		}
	}()
	wg.Wait()
	close(stop)
	rd.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	checkWalk(t, h, read, seen, &order, writers*batches*per)
}

// checkWalk ends a walk (read, its next page) now that the writers are
// done, and checks that it read every event once, in growing positions.
func checkWalk(t *testing.T, h *harness, read func() error, seen map[string]bool, order *[]invoicing.FeedPosition, total int) {
	t.Helper()
	for range total {
		before := len(seen)
		if err := read(); err != nil {
			t.Fatal(err)
		}
		if len(seen) == before {
			break
		}
	}
	if len(seen) != total {
		t.Errorf("the walk read %d events of %d: a cursor passed events committed behind it", len(seen), total)
	}
	for i, o := 1, *order; i < len(o); i++ {
		if !o[i-1].Less(o[i]) {
			t.Fatalf("positions %v then %v: not growing", o[i-1], o[i])
		}
	}
	st, err := h.Stats(context.Background(), 1)
	if err != nil || st.Events != int64(total) || st.Feeds != 1 {
		t.Errorf("stats %+v, %v; want one feed of %d events", st, err, total)
	}
}

func testRecordSeqGrows(t *testing.T, open opener) {
	h := open(t, Config{})
	ctx := context.Background()
	record(t, h, Batch{Events: events(coA, "a", 3)})
	h.clock.Add(-time.Hour) // a clock set back: positions still grow
	record(t, h, Batch{Events: events(coA, "b", 2)})
	h.clock.Add(2 * time.Hour)
	record(t, h, Batch{Events: events(coA, "c", 1)})
	p, err := h.ReadFeed(ctx, feedQuery(coA, 10))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range p.Rows {
		got = append(got, fmt.Sprintf("%d-%d", r.Position.Ms, r.Position.Seq))
	}
	ms := uint64(t0.UnixMilli())
	later := uint64(t0.Add(time.Hour).UnixMilli())
	want := []string{fmt.Sprint(ms, "-0"), fmt.Sprint(ms, "-1"), fmt.Sprint(ms, "-2"), fmt.Sprint(ms, "-3"), fmt.Sprint(ms, "-4"), fmt.Sprint(later, "-0")}
	if !same(got, want) {
		t.Errorf("positions %v, want %v", got, want)
	}
	// Another company's feed numbers on its own.
	record(t, h, Batch{Events: events(coB, "x", 1)})
	if p, _ := h.ReadFeed(ctx, feedQuery(coB, 10)); len(p.Rows) != 1 || p.Rows[0].Position.Ms != later {
		t.Errorf("company B's feed: %+v", p.Rows)
	}
}

func testRecordDedups(t *testing.T, open opener) {
	h := open(t, Config{})
	a := ev(coA, "a", "invoice.paid", "ep1")
	r := record(t, h, Batch{Events: []Event{a, a}}) // twice in one batch
	if fmt.Sprint(r.New) != "[true false]" || len(r.Deliveries) != 1 {
		t.Errorf("an id twice in a batch: %+v", r)
	}
	h.clock.Add(time.Hour)
	r = record(t, h, Batch{Events: []Event{a, ev(coA, "b", "invoice.paid", "ep1")}})
	if fmt.Sprint(r.New) != "[false true]" || len(r.Deliveries) != 1 || r.Deliveries[0].EventID != "b" {
		t.Errorf("an id found again: %+v, want only b queued", r)
	}
	if got := walk(t, h, feedQuery(coA, 10)); !same(got, []string{"a", "b"}) {
		t.Errorf("the feed: %v, want each id once", got)
	}
	// The same id in another company's feed is another event.
	if r := record(t, h, Batch{Events: []Event{ev(coB, "a", "invoice.paid")}}); !r.New[0] {
		t.Errorf("company B's a: %+v, want new", r)
	}
	// Remembered for Remember: found again later, it is recorded again.
	h.clock.Add(90 * 24 * time.Hour) // the default Remember
	if r := record(t, h, Batch{Events: []Event{a}}); !r.New[0] || len(r.Deliveries) != 1 {
		t.Errorf("an id found again after Remember: %+v, want recorded and queued again", r)
	}
}

func testRefoundDeliveries(t *testing.T, open opener) {
	h := open(t, Config{Retention: 48 * time.Hour})
	ctx := context.Background()
	// Found while its endpoint was lost (Redis lost it): no delivery.
	a := ev(coA, "a", "invoice.paid")
	if r := record(t, h, Batch{Events: []Event{a}}); len(r.Deliveries) != 0 {
		t.Fatalf("no endpoint: %+v", r)
	}
	// Found again once the endpoint is restored: it gets what it missed.
	h.clock.Add(time.Hour)
	a.Endpoints = []string{"ep1", "ep2"}
	r := record(t, h, Batch{Events: []Event{a}})
	if r.New[0] || len(r.Deliveries) != 2 {
		t.Fatalf("found again with restored endpoints: %+v, want not new and 2 deliveries", r)
	}
	f, err := h.Fetch(ctx, []DeliveryKey{{coA, "ep2", "a"}})
	if err != nil || !f[0].Found || string(f[0].Body) != string(a.Body) || f[0].State != Pending {
		t.Errorf("the restored endpoint's delivery: %+v, %v", f, err)
	}
	// Again: each endpoint has its delivery already.
	if r := record(t, h, Batch{Events: []Event{a}}); len(r.Deliveries) != 0 {
		t.Errorf("found a third time: %+v, want no delivery", r)
	}
	// A mark older than the retention: no delivery, even to a new endpoint.
	h.clock.Add(48 * time.Hour)
	a.Endpoints = []string{"ep3"}
	if r := record(t, h, Batch{Events: []Event{a}}); r.New[0] || len(r.Deliveries) != 0 {
		t.Errorf("found again past the retention: %+v, want nothing queued", r)
	}
	if got := walk(t, h, feedQuery(coA, 10)); !same(got, []string{"a"}) {
		t.Errorf("the feed: %v, want a once", got)
	}
}
