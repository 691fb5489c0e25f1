package history

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/invoicing"
)

// recordSpread records evs one batch of 3 at a time, the clock moving a
// millisecond between batches, and B's events between A's.
func recordSpread(t *testing.T, h *harness, evs []Event) {
	t.Helper()
	for i := 0; i < len(evs); i += 3 {
		record(t, h, Batch{Events: evs[i:min(i+3, len(evs))]})
		record(t, h, Batch{Events: []Event{ev(coB, "b"+evs[i].ID, evs[i].Type)}})
		h.clock.Add(time.Millisecond)
	}
}

func testFeedPages(t *testing.T, open opener) {
	h := open(t, Config{})
	ctx := context.Background()
	evs := events(coA, "e", 25)
	recordSpread(t, h, evs)
	want := ids(evs)
	// Oldest first, by pages of 10: every event once, in order.
	if got := walk(t, h, feedQuery(coA, 10)); !same(got, want) {
		t.Errorf("oldest first: %v\nwant %v", got, want)
	}
	// The last page's next is where a poller asks again; nothing new, the
	// same; something new, it comes.
	q := feedQuery(coA, 100)
	p, err := h.ReadFeed(ctx, q)
	if err != nil || len(p.Rows) != 25 || p.HasMore || p.Next == nil || *p.Next != p.Rows[24].Position {
		t.Fatalf("the whole feed: %d rows, more %v, next %v, %v", len(p.Rows), p.HasMore, p.Next, err)
	}
	q.After = p.Next
	if p, err := h.ReadFeed(ctx, q); err != nil || len(p.Rows) != 0 || *p.Next != *q.After {
		t.Errorf("polling at the end: %+v, %v; want nothing and the same next", p, err)
	}
	record(t, h, Batch{Events: []Event{ev(coA, "late", "invoice.paid")}})
	if p, err := h.ReadFeed(ctx, q); err != nil || len(p.Rows) != 1 || p.Rows[0].EventID != "late" {
		t.Errorf("polling after one more: %+v, %v", p, err)
	}
	want = append(want, "late")
	// Newest first: the reverse, and no next once the oldest is read.
	nq := feedQuery(coA, 10)
	nq.Newest = true
	if got := walk(t, h, nq); !same(got, reversed(want)) {
		t.Errorf("newest first: %v\nwant %v", got, reversed(want))
	}
	nq.Limit = 100
	if p, err := h.ReadFeed(ctx, nq); err != nil || p.Next != nil || p.HasMore {
		t.Errorf("newest first, all of it: next %v, more %v, %v; want no next", p.Next, p.HasMore, err)
	}
	// Rows carry their body as recorded.
	if string(p.Rows[0].Body) != string(evs[0].Body) {
		t.Errorf("body %s, want %s", p.Rows[0].Body, evs[0].Body)
	}
	// An empty feed: oldest first says where to poll from, newest first ends.
	const coC = "0a1b2c3d-0000-4000-8000-00000000000c"
	if p, err := h.ReadFeed(ctx, feedQuery(coC, 10)); err != nil || len(p.Rows) != 0 || p.Next == nil || p.HasMore {
		t.Errorf("an empty feed oldest first: %+v, %v", p, err)
	}
	eq := feedQuery(coC, 10)
	eq.Newest = true
	if p, err := h.ReadFeed(ctx, eq); err != nil || len(p.Rows) != 0 || p.Next != nil {
		t.Errorf("an empty feed newest first: %+v, %v", p, err)
	}
	// The zero position (the start, as an empty feed answered it) reads all.
	q.After = &invoicing.FeedPosition{}
	if p, err := h.ReadFeed(ctx, q); err != nil || len(p.Rows) != 26 {
		t.Errorf("from the zero position: %d rows, %v; want all 26", len(p.Rows), err)
	}
	// TEST's feed of the same company is another.
	tq := feedQuery(coA, 10)
	tq.Mode = invoicing.Test
	if p, err := h.ReadFeed(ctx, tq); err != nil || len(p.Rows) != 0 {
		t.Errorf("TEST's feed: %+v, %v", p, err)
	}
}

func testFeedFilters(t *testing.T, open opener) {
	h := open(t, Config{})
	evs := events(coA, "e", 30, "invoice.paid", "client.created", "invoice.issued")
	start := h.clock.Now()
	recordSpread(t, h, evs)
	of := func(pred func(i int, e Event) bool) []string {
		var out []string
		for i, e := range evs {
			if pred(i, e) {
				out = append(out, e.ID)
			}
		}
		return out
	}
	paid := of(func(_ int, e Event) bool { return e.Type == "invoice.paid" })
	two := of(func(_ int, e Event) bool { return e.Type != "client.created" })
	for _, limit := range []int{1, 3, 7, 100} {
		q := feedQuery(coA, limit)
		q.Types = []string{"invoice.paid"}
		if got := walk(t, h, q); !same(got, paid) {
			t.Errorf("one type by %d: %v\nwant %v", limit, got, paid)
		}
		q.Types = []string{"invoice.issued", "invoice.paid", "invoice.paid"}
		if got := walk(t, h, q); !same(got, two) {
			t.Errorf("two types by %d: %v\nwant %v", limit, got, two)
		}
		q.Newest = true
		if got := walk(t, h, q); !same(got, reversed(two)) {
			t.Errorf("two types newest first by %d: %v\nwant %v", limit, got, reversed(two))
		}
	}
	// since and until bound the recording time: batch i (3 events) was
	// recorded at start + i ms.
	since, until := start.Add(2*time.Millisecond), start.Add(5*time.Millisecond)
	inRange := of(func(i int, _ Event) bool { return i/3 >= 2 && i/3 < 5 })
	q := feedQuery(coA, 4)
	q.Since, q.Until = &since, &until
	if got := walk(t, h, q); !same(got, inRange) {
		t.Errorf("since/until: %v\nwant %v", got, inRange)
	}
	q.Newest = true
	if got := walk(t, h, q); !same(got, reversed(inRange)) {
		t.Errorf("since/until newest first: %v\nwant %v", got, reversed(inRange))
	}
	q.Types = []string{"client.created", "invoice.issued"}
	want := of(func(i int, e Event) bool { return i/3 >= 2 && i/3 < 5 && e.Type != "invoice.paid" })
	if got := walk(t, h, q); !same(got, reversed(want)) {
		t.Errorf("since/until and types: %v\nwant %v", got, reversed(want))
	}
	// until before since: nothing, and no error.
	q.Since, q.Until = &until, &since
	if got := walk(t, h, q); len(got) != 0 {
		t.Errorf("until before since: %v", got)
	}
	// Bounds far out of range read nothing or everything, never fail.
	far, early := time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)
	q = feedQuery(coA, 100)
	q.Since, q.Until = &early, &far
	if got := walk(t, h, q); len(got) != 30 {
		t.Errorf("from year 1 to 9999: %d events, want 30", len(got))
	}
}

// fieldErr reports whether err is an Invalid field error naming field.
func fieldErr(err error, field string) bool {
	var fe *invoicing.FieldError
	return errors.As(err, &fe) && fe.Field == field && invoicing.KindOf(err) == invoicing.Invalid
}

func testFeedHostile(t *testing.T, open opener) {
	h := open(t, Config{})
	ctx := context.Background()
	record(t, h, Batch{Events: events(coA, "e", 3)})
	for _, pos := range []invoicing.FeedPosition{
		{Ms: math.MaxUint64, Seq: math.MaxUint64},
		{Ms: math.MaxUint64},
		{Ms: 1, Seq: 1000},
		{Ms: math.MaxInt64/1000 + 1},
		{Ms: math.MaxInt64 / 1000, Seq: 999},
	} {
		for _, newest := range []bool{false, true} {
			q := feedQuery(coA, 10)
			q.After, q.Newest = &pos, newest
			if _, err := h.ReadFeed(ctx, q); !fieldErr(err, "cursor") {
				t.Errorf("position %+v (newest %v): %v, want an invalid cursor", pos, newest, err)
			}
		}
	}
	// The last position an int64 holds is one: nothing after it.
	last := invoicing.FeedPosition{Ms: math.MaxInt64 / 1000, Seq: math.MaxInt64 % 1000}
	q := feedQuery(coA, 10)
	q.After = &last
	if p, err := h.ReadFeed(ctx, q); err != nil || len(p.Rows) != 0 {
		t.Errorf("after the last position: %+v, %v", p, err)
	}
	for _, limit := range []int{0, -1, 101} {
		if _, err := h.ReadFeed(ctx, feedQuery(coA, limit)); !fieldErr(err, "pageSize") {
			t.Errorf("pageSize %d: %v, want refused", limit, err)
		}
	}
	q = feedQuery(coA, 10)
	q.Types = []string{strings.Repeat("x", 65)}
	if _, err := h.ReadFeed(ctx, q); !fieldErr(err, "type") {
		t.Errorf("an overlong type: %v, want refused", err)
	}
	if _, err := h.ReadFeed(ctx, feedQuery("not-a-company", 10)); err == nil {
		t.Error("a company id that is no UUID was read")
	}
}

func testFeedExpired(t *testing.T, open opener) {
	h := open(t, Config{FeedWindow: 10 * 24 * time.Hour, Retention: 24 * time.Hour})
	ctx := context.Background()
	old := events(coA, "old", 3)
	record(t, h, Batch{Events: old})
	first, err := h.ReadFeed(ctx, feedQuery(coA, 1))
	if err != nil {
		t.Fatal(err)
	}
	h.clock.Add(5 * 24 * time.Hour)
	record(t, h, Batch{Events: events(coA, "new", 2)})
	all, err := h.ReadFeed(ctx, feedQuery(coA, 100))
	if err != nil || len(all.Rows) != 5 {
		t.Fatalf("before the window passes: %d rows, %v", len(all.Rows), err)
	}
	lastOld := all.Rows[2].Position
	h.clock.Add(7 * 24 * time.Hour) // the old events are 12 days old
	if _, err := h.Maintain(ctx); err != nil {
		t.Fatal(err)
	}
	// A cursor before events that were dropped: refused, not skipping.
	q := feedQuery(coA, 10)
	q.After = first.Next
	if _, err := h.ReadFeed(ctx, q); !fieldErr(err, "cursor") || !strings.Contains(err.Error(), "window") {
		t.Errorf("a cursor before dropped events: %v, want an expired cursor", err)
	}
	// A cursor at the last event dropped misses nothing.
	q.After = &lastOld
	if p, err := h.ReadFeed(ctx, q); err != nil || len(p.Rows) != 2 || p.Rows[0].EventID != "new0" {
		t.Errorf("a cursor at the last dropped event: %+v, %v; want the 2 new ones", p, err)
	}
	// Newest first, a cursor anywhere walks down to what is kept.
	q.After, q.Newest = first.Next, true
	if p, err := h.ReadFeed(ctx, q); err != nil || len(p.Rows) != 0 {
		t.Errorf("newest first below the window: %+v, %v", p, err)
	}
	// Everything dropped: a first read says to poll from the last dropped.
	h.clock.Add(10 * 24 * time.Hour)
	if _, err := h.Maintain(ctx); err != nil {
		t.Fatal(err)
	}
	p, err := h.ReadFeed(ctx, feedQuery(coA, 10))
	if err != nil || len(p.Rows) != 0 || p.Next == nil || *p.Next != all.Rows[4].Position {
		t.Errorf("a first read of a feed all dropped: %+v, %v; want next at %v", p, err, all.Rows[4].Position)
	}
	q = feedQuery(coA, 10)
	q.After = p.Next
	if _, err := h.ReadFeed(ctx, q); err != nil {
		t.Errorf("polling from there: %v", err)
	}
}
