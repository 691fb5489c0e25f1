package events

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/internal/testenv"
)

// A receiver that failed every attempt gets the failed events again with a
// recovery, a single event with a replay, and a test delivery on request;
// the delivery log filters by state and type and pages without repeat.
func TestReplayRecoverAndTest(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.recv.setStatus(http.StatusInternalServerError)
	cfg := e.config()
	cfg.Schedule = []time.Duration{20 * time.Millisecond} // two attempts, then failed
	s := e.service(cfg)
	ep, _ := e.endpoint(s)
	e.run(s)
	ctx := context.Background()
	ids := []string{cli1, "11000000-0000-4000-8000-000000000002", "11000000-0000-4000-8000-000000000003"}
	for _, id := range ids {
		e.insertClient(id, "Cliente")
	}
	failed := waitFailed(t, s, ep.ID, len(ids))
	for _, d := range failed {
		if d.Attempts != 2 || len(d.Log) != 2 || d.DoneAt == nil || d.Type != ClientCreated {
			t.Fatalf("failed delivery %+v", d)
		}
	}
	// Pages of one, filtered by type: each delivery once.
	if seen := pageThrough(t, s, ep.ID, DeliveryQuery{Limit: 1, Type: ClientCreated}); len(seen) != len(ids) {
		t.Fatalf("paged through %d deliveries, want %d", len(seen), len(ids))
	}
	if got, _, _ := s.Deliveries(ctx, ep.ID, DeliveryQuery{Type: InvoicePaid}); len(got) != 0 {
		t.Fatalf("type filter: %d", len(got))
	}
	if _, _, err := s.Deliveries(ctx, ep.ID, DeliveryQuery{State: "lost"}); !errors.Is(err, ErrInvalidWebhook) {
		t.Fatalf("unknown state: %v", err)
	}

	// The receiver is fixed: recover everything failed since an hour ago.
	e.recv.setStatus(http.StatusOK)
	before := len(e.recv.deliveries())
	r, err := s.Recover(ctx, ep.ID, time.Now().Add(-time.Hour))
	if err != nil || r != (Recovered{Failed: len(ids)}) {
		t.Fatalf("recover: %+v, %v", r, err)
	}
	for _, id := range ids {
		waitDelivery(t, s, ep.ID, e.recv, key{ClientCreated, id}, "delivered")
	}
	if r, _ := s.Recover(ctx, ep.ID, time.Now().Add(-time.Hour)); r != (Recovered{}) {
		t.Fatalf("a second recovery queued %+v", r)
	}
	// A replay sends a delivered event again, with its id.
	first := failed[0]
	d, err := s.Replay(ctx, ep.ID, first.EventID)
	if err != nil || d.EventID != first.EventID {
		t.Fatalf("replay: %+v %v", d, err)
	}
	e.waitArrivals(first.EventID, before, 2)
	for _, bad := range []string{"evt_nope", "evt_" + strings.Repeat("a", 26)} {
		if _, err := s.Replay(ctx, ep.ID, bad); !errors.Is(err, ErrNotFound) {
			t.Errorf("replay %s: %v", bad, err)
		}
	}
	if _, err := s.Replay(ctx, "ep_"+strings.Repeat("a", 26), first.EventID); !errors.Is(err, ErrNotFound) {
		t.Errorf("replay to no endpoint: %v", err)
	}
	checkSendTest(t, e, s, ep)
}

// checkSendTest sends a test delivery to an endpoint subscribed to another
// type: it arrives all the same, with the id TestWebhook answered.
func checkSendTest(t *testing.T, e *env, s *Service, ep Webhook) {
	t.Helper()
	ctx := context.Background()
	off := []string{"invoice.paid"}
	if _, err := s.UpdateWebhook(ctx, ep.ID, Patch{Types: &off}); err != nil {
		t.Fatal(err)
	}
	ev, err := s.TestWebhook(ctx, ep.ID)
	if err != nil || ev.Type != TestType {
		t.Fatalf("test: %+v %v", ev, err)
	}
	got := e.recv.waitFor(key{TestType, ""})
	var test delivery
	for _, d := range got {
		if d.parsed.Type == TestType {
			test = d
		}
	}
	if test.header.Get("webhook-id") != ev.ID || !strings.Contains(string(test.parsed.Data), ep.ID) {
		t.Fatalf("test delivery %s %s", test.header.Get("webhook-id"), test.parsed.Data)
	}
}

// One recovery sends both the deliveries that failed for good and those
// waiting for a retry an hour away, says how many of each, and leaves
// alone what was delivered or queued before its time.
func TestRecoverFailedAndWaiting(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.recv.setStatus(http.StatusServiceUnavailable)
	cfg, clock := e.clocked()
	cfg.Schedule = []time.Duration{time.Hour} // two attempts an hour apart, then failed
	cfg.Retention = 24 * time.Hour
	s := e.service(cfg)
	ep, _ := e.endpoint(s)
	e.run(s)
	ctx := context.Background()
	const cli2, cli3 = "11000000-0000-4000-8000-000000000002", "11000000-0000-4000-8000-000000000003"
	start := clock.Now()
	e.insertClient(cli1, "Um")
	e.insertClient(cli2, "Dois")
	for _, id := range []string{cli1, cli2} {
		waitAttempts(t, s, ep.ID, e.recv, key{ClientCreated, id}, 1)
	}
	clock.Add(2 * time.Hour) // their retries are due, and fail: given up
	for _, id := range []string{cli1, cli2} {
		waitDelivery(t, s, ep.ID, e.recv, key{ClientCreated, id}, "failed")
	}
	e.insertClient(cli3, "Três")
	waiting := waitAttempts(t, s, ep.ID, e.recv, key{ClientCreated, cli3}, 1)
	if waiting.State != "pending" || waiting.NextAttemptAt == nil || !waiting.NextAttemptAt.After(clock.Now().Add(50*time.Minute)) {
		t.Fatalf("not waiting for its retry: %+v", waiting)
	}
	// A recovery from after the first two takes only the waiting one.
	if r, err := s.Recover(ctx, ep.ID, start.Add(time.Hour)); err != nil || r != (Recovered{Waiting: 1}) {
		t.Fatalf("recover since the third: %+v, %v", r, err)
	}
	e.recv.setStatus(http.StatusOK)
	waitDelivery(t, s, ep.ID, e.recv, key{ClientCreated, cli3}, "delivered")
	if r, err := s.Recover(ctx, ep.ID, start.Add(-time.Minute)); err != nil || r != (Recovered{Failed: 2}) {
		t.Fatalf("recover since the start: %+v, %v", r, err)
	}
	for _, id := range []string{cli1, cli2} {
		if d := waitDelivery(t, s, ep.ID, e.recv, key{ClientCreated, id}, "delivered"); d.Attempts != 1 {
			t.Errorf("%s: %d attempts after the recovery, want 1 (counted afresh)", id, d.Attempts)
		}
	}
	if r, _ := s.Recover(ctx, ep.ID, start.Add(-time.Minute)); r != (Recovered{}) {
		t.Fatalf("a recovery with nothing failed or waiting queued %+v", r)
	}
}

// waitFailed waits until n of an endpoint's deliveries have failed for good.
func waitFailed(t *testing.T, s *Service, ep string, n int) []Delivery {
	t.Helper()
	var failed []Delivery
	testenv.Eventually(t, "the deliveries failed for good", func() error {
		var err error
		if failed, _, err = s.Deliveries(context.Background(), ep, DeliveryQuery{State: "failed"}); err != nil {
			t.Fatal(err)
		}
		return atLeast(len(failed), n, "deliveries failed")
	})
	return failed
}

// pageThrough reads every page of q, and fails if a delivery is on two.
func pageThrough(t *testing.T, s *Service, ep string, q DeliveryQuery) map[string]bool {
	t.Helper()
	seen := map[string]bool{}
	for {
		page, next, err := s.Deliveries(context.Background(), ep, q)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range page {
			if seen[d.EventID] {
				t.Fatalf("%s on two pages", d.EventID)
			}
			seen[d.EventID] = true
		}
		if next == "" {
			return seen
		}
		q.Cursor = next
	}
}

// waitArrivals waits until the receiver has had n deliveries of the event
// id since its delivery number since.
func (e *env) waitArrivals(id string, since, n int) {
	e.t.Helper()
	testenv.Eventually(e.t, "the arrivals of "+id, func() error {
		got := 0
		for _, d := range e.recv.deliveries()[since:] {
			if d.header.Get("webhook-id") == id {
				got++
			}
		}
		return testenv.Want(got, n, "arrivals")
	})
}
