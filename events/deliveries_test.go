package events

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
)

// logService is a service on a clock of the test's, not running, and an
// endpoint whose deliveries stay pending.
func logService(t *testing.T, rdb *redis.Client, prefix string) (*Service, *testenv.Clock, Webhook) {
	t.Helper()
	clock := testenv.NewClock(time.Now())
	s, err := New(Config{Redis: rdb, Prefix: prefix, Now: clock.Now, AllowHTTP: true,
		AllowedNetworks: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})
	if err != nil {
		t.Fatal(err)
	}
	ep, _, err := s.CreateWebhook(context.Background(), NewWebhook{CompanyID: testCompany, Mode: invoicing.Test, URL: "http://127.0.0.1:9/hook"})
	if err != nil {
		t.Fatal(err)
	}
	return s, clock, ep
}

// burst queues n client.created events to ep, in pages as detection queues
// them, all at the clock's instant: one detection step, one score in the log.
func burst(t *testing.T, s *Service, ep Webhook, n int, tag string) map[string]bool {
	t.Helper()
	ids := make(map[string]bool, n)
	for start := 0; start < n; start += pageSize {
		var page []queued
		for i := start; i < min(n, start+pageSize); i++ {
			res := fmt.Sprintf("%s-%d", tag, i)
			ev := Event{ID: eventID(invoicing.Test, ep.CompanyID, ClientCreated, res, ""), Type: ClientCreated, Mode: invoicing.Test,
				CompanyID: ep.CompanyID, ResourceID: res, Time: s.now(), Data: []byte(`{"id":"` + res + `"}`)}
			page = append(page, queued{ev: ev, eps: []string{ep.ID}})
			ids[ev.ID] = true
		}
		if _, _, err := s.q.enqueue(context.Background(), nil, move{}, page); err != nil {
			t.Fatal(err)
		}
	}
	return ids
}

// walk pages through an endpoint's delivery log, failing on a delivery
// listed twice or out of order (newest first), and returns the ids listed.
func walk(t *testing.T, s *Service, endpointID string, q DeliveryQuery, between func()) map[string]bool {
	t.Helper()
	seen := map[string]bool{}
	var last time.Time
	for pages := 0; ; pages++ {
		page, next, err := s.Deliveries(context.Background(), endpointID, q)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range page {
			if seen[d.EventID] {
				t.Fatalf("limit %d: %s listed twice (page %d)", q.Limit, d.EventID, pages)
			}
			if d.CompanyID != testCompany || d.Mode != invoicing.Test {
				t.Fatalf("%s: listed as of %q in mode %q", d.EventID, d.CompanyID, d.Mode)
			}
			if !last.IsZero() && d.QueuedAt.After(last) {
				t.Fatalf("limit %d: %s queued at %s after one listed before it", q.Limit, d.EventID, d.QueuedAt)
			}
			seen[d.EventID], last = true, d.QueuedAt
		}
		if next == "" {
			return seen
		}
		if between != nil {
			between()
		}
		q.Cursor = next
	}
}

// Bursts of 1,000 and 10,000 events queued in one detection step (one
// millisecond: one score in the log) are each listed exactly once, at any
// page size, with a filter, and while more are queued at the same instant
// between pages.
func TestDeliveryLogAfterABurst(t *testing.T) {
	t.Parallel()
	redises(t, testDeliveryLogAfterABurst)
}

func testDeliveryLogAfterABurst(t *testing.T, rdb *redis.Client, prefix string) {
	sizes := []int{1000, 10000}
	if prefix == "" { // miniredis sorts a whole set for a rank: the smaller burst
		sizes = sizes[:1]
	}
	for _, n := range sizes {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			s, clock, ep := logService(t, rdb, fmt.Sprintf("%sburst%d:", prefix, n))
			clock.Add(-time.Minute)
			older := burst(t, s, ep, 3, "older") // a minute before: listed last
			clock.Add(time.Minute)
			want := burst(t, s, ep, n, "burst")
			for id := range older {
				want[id] = true
			}
			limits := []int{MaxDeliveriesPage, 7}
			if n > 1000 {
				limits = limits[:1]
			}
			for _, limit := range limits {
				if got := walk(t, s, ep.ID, DeliveryQuery{Limit: limit}, nil); !sameSet(got, want) {
					t.Fatalf("limit %d: listed %d of %d deliveries", limit, len(got), len(want))
				}
			}
			if got := walk(t, s, ep.ID, DeliveryQuery{Limit: MaxDeliveriesPage, State: "pending", Type: ClientCreated}, nil); !sameSet(got, want) {
				t.Fatalf("filtered: listed %d of %d deliveries", len(got), len(want))
			}
			// More queued at the same instant between pages: those already
			// in the log are each listed once all the same.
			extra := 0
			got := walk(t, s, ep.ID, DeliveryQuery{Limit: MaxDeliveriesPage}, func() {
				extra++
				burst(t, s, ep, 1, fmt.Sprint("between", extra))
			})
			for id := range want {
				if !got[id] {
					t.Fatalf("queued between pages: %s not listed (%d listed)", id, len(got))
				}
			}
		})
	}
}

func sameSet(a, b map[string]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}

// A cursor whose delivery was trimmed (past the retention) goes on with the
// older ones; a cursor no page answered is refused.
func TestDeliveryLogCursors(t *testing.T) {
	t.Parallel()
	rdb, prefix := testenv.Redis(t)
	s, clock, ep := logService(t, rdb, prefix)
	ctx := context.Background()
	older := burst(t, s, ep, 5, "older")
	clock.Add(time.Second)
	newer := burst(t, s, ep, 5, "newer")
	page, next, err := s.Deliveries(ctx, ep.ID, DeliveryQuery{Limit: 3})
	if err != nil || len(page) != 3 || next == "" {
		t.Fatalf("first page: %d, %q, %v", len(page), next, err)
	}
	// The newer burst's entries leave the log (as a trim would take them).
	for id := range newer {
		if err := rdb.ZRem(ctx, s.l.log(ep.ID), id).Err(); err != nil {
			t.Fatal(err)
		}
	}
	rest, _, err := s.Deliveries(ctx, ep.ID, DeliveryQuery{Limit: MaxDeliveriesPage, Cursor: next})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, d := range rest {
		got[d.EventID] = true
	}
	if !sameSet(got, older) {
		t.Fatalf("after a trimmed cursor: %d deliveries, want the %d older ones", len(got), len(older))
	}
	for _, bad := range []string{"x", "12:evt_nope", "abc:" + page[0].EventID, "-1:" + page[0].EventID} {
		if _, _, err := s.Deliveries(ctx, ep.ID, DeliveryQuery{Cursor: bad}); !errors.Is(err, ErrInvalidWebhook) {
			t.Errorf("cursor %q: %v", bad, err)
		}
	}
}

// Reading 10,000 deliveries queued in one step, a page of 100 at a time, as
// the admin API's statistics of an endpoint read its log: what one reading
// costs (the ns/op), Redis busy with nothing else meanwhile.
func BenchmarkDeliveryLog10000(b *testing.B) {
	rdb, prefix := testenv.Redis(b)
	s, err := New(Config{Redis: rdb, Prefix: prefix, AllowHTTP: true, AllowedNetworks: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	ep, _, err := s.CreateWebhook(ctx, NewWebhook{CompanyID: testCompany, Mode: invoicing.Test, URL: "http://127.0.0.1:9/hook"})
	if err != nil {
		b.Fatal(err)
	}
	be := &benchEnv{s: s}
	be.queue(b, ep, 10000, "log")
	b.ResetTimer()
	for b.Loop() {
		n := 0
		for q := (DeliveryQuery{Limit: MaxDeliveriesPage}); ; {
			page, next, err := s.Deliveries(ctx, ep.ID, q)
			if err != nil {
				b.Fatal(err)
			}
			n += len(page)
			if next == "" {
				break
			}
			q.Cursor = next
		}
		if n != 10000 {
			b.Fatalf("read %d deliveries, want 10000", n)
		}
	}
}
