package history

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/internal/sqldb"
)

func attempt(h *harness, status int, msg string) *Attempt {
	return &Attempt{At: h.clock.Now().Truncate(time.Millisecond).UTC(), Status: status, Latency: 12.5, Error: msg, Response: "r" + msg}
}

// exec runs a statement on the harness's database, as an operator would.
func exec(t *testing.T, h *harness, sql string, args ...any) {
	t.Helper()
	err := h.db.Tx(context.Background(), func(q sqldb.Querier) error {
		_, err := q.Exec(context.Background(), sql, args...)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func complete(t *testing.T, h *harness, outs ...Outcome) {
	t.Helper()
	if err := h.Complete(context.Background(), outs); err != nil {
		t.Fatal(err)
	}
}

func delivery(t *testing.T, h *harness, k DeliveryKey) Delivery {
	t.Helper()
	d, err := h.Delivery(context.Background(), k)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func testFetchComplete(t *testing.T, open opener) {
	h := open(t, Config{MaxAttempts: 3, Retention: 48 * time.Hour})
	ctx := context.Background()
	a := ev(coA, "a", "invoice.paid", "ep1", "ep2")
	r := record(t, h, Batch{Events: []Event{a, ev(coB, "b", "client.created", "ep9")}})
	queued := t0.UnixMilli()
	if len(r.Deliveries) != 3 || r.Deliveries[0] != (Queued{coA, "ep1", "a", queued, queued}) {
		t.Fatalf("queued %+v", r.Deliveries)
	}
	k1, k2 := DeliveryKey{coA, "ep1", "a"}, DeliveryKey{coA, "ep2", "a"}
	fs, err := h.Fetch(ctx, []DeliveryKey{k1, {coA, "ep1", "nope"}, {coB, "ep9", "b"}, {coB, "ep1", "a"}})
	if err != nil {
		t.Fatal(err)
	}
	if f := fs[0]; !f.Found || f.State != Pending || f.Attempts != 0 || f.QueuedMs != queued || string(f.Body) != string(a.Body) ||
		f.Cause != a.Cause || f.Type != a.Type || f.ResourceID != a.ResourceID || f.Mode != a.Mode || f.DeliveryKey != k1 {
		t.Errorf("fetched %+v", f)
	}
	if fs[1].Found || !fs[2].Found || fs[3].Found || fs[3].DeliveryKey != (DeliveryKey{coB, "ep1", "a"}) {
		t.Errorf("fetched: unknown %v, B's %v, A's event under B %v", fs[1].Found, fs[2].Found, fs[3].Found)
	}
	// A failure retried, then a success.
	h.clock.Add(time.Second)
	retry := h.clock.Now().Add(time.Minute)
	complete(t, h, Outcome{DeliveryKey: k1, Attempt: attempt(h, 500, "boom"), State: Pending, Next: retry},
		Outcome{DeliveryKey: k2, Attempt: attempt(h, 200, ""), State: Delivered})
	d := delivery(t, h, k1)
	if d.State != Pending || d.Attempts != 1 || d.NextAttemptAt == nil || !d.NextAttemptAt.Equal(retry.Truncate(time.Millisecond)) ||
		d.DoneAt != nil || len(d.Log) != 1 || d.Log[0] != *attempt(h, 500, "boom") {
		t.Errorf("after a retried failure: %+v", d)
	}
	if d := delivery(t, h, k2); d.State != Delivered || d.Attempts != 1 || d.DoneAt == nil || d.NextAttemptAt != nil {
		t.Errorf("after a success: %+v", d)
	}
	// A lost lease logs its attempt and changes nothing else.
	complete(t, h, Outcome{DeliveryKey: k1, Attempt: attempt(h, 0, "timeout")})
	if d := delivery(t, h, k1); d.State != Pending || d.Attempts != 1 || len(d.Log) != 2 || !d.NextAttemptAt.Equal(retry.Truncate(time.Millisecond)) {
		t.Errorf("after a lost lease's attempt: %+v", d)
	}
	// The log keeps the newest MaxAttempts, oldest first.
	for i := range 3 {
		h.clock.Add(time.Second)
		complete(t, h, Outcome{DeliveryKey: k1, Attempt: attempt(h, 502, strconv.Itoa(i)), State: Pending, Next: h.clock.Now()})
	}
	d = delivery(t, h, k1)
	if len(d.Log) != 3 || d.Log[0].Error != "0" || d.Log[2].Error != "2" || d.Attempts != 4 {
		t.Errorf("log %+v, attempts %d; want the newest 3 and 4 attempts", d.Log, d.Attempts)
	}
	complete(t, h, Outcome{DeliveryKey: k1, Attempt: attempt(h, 410, "gone"), State: Failed})
	if f, _ := h.Fetch(ctx, []DeliveryKey{k1}); f[0].State != Failed || f[0].Attempts != 5 {
		t.Errorf("after the last attempt: %+v", f[0])
	}
	// Expired: never attempted.
	k3 := DeliveryKey{coB, "ep9", "b"}
	complete(t, h, Outcome{DeliveryKey: k3, State: Expired})
	if d := delivery(t, h, k3); d.State != Expired || d.Attempts != 0 || len(d.Log) != 0 || d.DoneAt == nil {
		t.Errorf("expired: %+v", d)
	}
	// Outcomes that say nothing are refused.
	for _, o := range []Outcome{{DeliveryKey: k1}, {DeliveryKey: k1, State: "lost"}, {DeliveryKey: k1, State: Pending, Attempt: attempt(h, 500, "")}} {
		if err := h.Complete(ctx, []Outcome{o}); err == nil {
			t.Errorf("outcome %+v was taken", o)
		}
	}
	// Past the retention: gone, and left alone.
	h.clock.Add(48 * time.Hour)
	if f, _ := h.Fetch(ctx, []DeliveryKey{k2}); f[0].Found {
		t.Errorf("fetched past the retention: %+v", f[0])
	}
	complete(t, h, Outcome{DeliveryKey: k2, Attempt: attempt(h, 200, ""), State: Delivered})
	if _, err := h.Delivery(ctx, k2); !errors.Is(err, ErrNotFound) {
		t.Errorf("a delivery past the retention: %v, want ErrNotFound", err)
	}
}

func testDeliveryLog(t *testing.T, open opener) {
	h := open(t, Config{})
	ctx := context.Background()
	// 25 deliveries to ep1, 5 in each millisecond (so that the cursor
	// orders within one), types alternating; every third failed.
	var want []string
	for i := range 25 {
		typ := "invoice.paid"
		if i%2 == 1 {
			typ = "client.updated"
		}
		id := fmt.Sprintf("e%02d", i)
		record(t, h, Batch{Events: []Event{ev(coA, id, typ, "ep1", "ep2")}})
		if i%3 == 0 {
			complete(t, h, Outcome{DeliveryKey: DeliveryKey{coA, "ep1", id}, Attempt: attempt(h, 500, "x"), State: Failed})
		}
		want = append(want, id)
		if i%5 == 4 {
			h.clock.Add(time.Millisecond)
		}
	}
	want = reversed(want)
	walkLog := func(q LogQuery) []string {
		var got []string
		for range 100 {
			p, err := h.Log(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range p.Deliveries {
				got = append(got, d.EventID)
				if d.EventID == "e00" && (len(d.Log) != 1 || d.Log[0].Status != 500) {
					t.Errorf("e00's attempts in the log: %+v", d.Log)
				}
			}
			if p.Next == "" {
				return got
			}
			q.Cursor = p.Next
		}
		t.Fatal("the log's walk did not end")
		return nil
	}
	for _, limit := range []int{1, 4, 10, 100} {
		if got := walkLog(LogQuery{CompanyID: coA, EndpointID: "ep1", Limit: limit}); !same(got, want) {
			t.Errorf("the log by %d: %v\nwant %v", limit, got, want)
		}
	}
	var failed, clients []string
	for _, id := range want {
		n, _ := strconv.Atoi(id[1:])
		if n%3 == 0 {
			failed = append(failed, id)
		}
		if n%2 == 1 {
			clients = append(clients, id)
		}
	}
	if got := walkLog(LogQuery{CompanyID: coA, EndpointID: "ep1", Limit: 3, State: Failed}); !same(got, failed) {
		t.Errorf("failed ones: %v\nwant %v", got, failed)
	}
	if got := walkLog(LogQuery{CompanyID: coA, EndpointID: "ep1", Limit: 3, Type: "client.updated"}); !same(got, clients) {
		t.Errorf("client.updated ones: %v\nwant %v", got, clients)
	}
	if got := walkLog(LogQuery{CompanyID: coB, EndpointID: "ep1"}); len(got) != 0 {
		t.Errorf("company B's ep1: %v, want nothing", got)
	}
	p, err := h.Log(ctx, LogQuery{CompanyID: coA, EndpointID: "ep2"})
	if err != nil || len(p.Deliveries) != 20 || p.Next == "" || p.Deliveries[0].State != Pending || len(p.Deliveries[0].Log) != 0 {
		t.Errorf("the default page: %d deliveries, next %q, %v", len(p.Deliveries), p.Next, err)
	}
	for _, q := range []LogQuery{{CompanyID: coA, EndpointID: "ep1", State: "lost"}, {CompanyID: coA, EndpointID: "ep1", Cursor: "x"},
		{CompanyID: coA, EndpointID: "ep1", Cursor: "-1:e"}, {CompanyID: coA, EndpointID: "ep1", Cursor: "99999999999999999999:e"}} {
		if _, err := h.Log(ctx, q); !fieldErr(err, "state") && !fieldErr(err, "cursor") {
			t.Errorf("%+v: %v, want refused", q, err)
		}
	}
}

func testRequeue(t *testing.T, open opener) {
	h := open(t, Config{})
	ctx := context.Background()
	for _, id := range []string{"failed", "waiting", "delivered", "due", "old"} {
		record(t, h, Batch{Events: []Event{ev(coA, id, "invoice.paid", "ep1")}})
		h.clock.Add(time.Second)
	}
	key := func(id string) DeliveryKey { return DeliveryKey{coA, "ep1", id} }
	complete(t, h, Outcome{DeliveryKey: key("failed"), Attempt: attempt(h, 500, "x"), State: Failed},
		Outcome{DeliveryKey: key("waiting"), Attempt: attempt(h, 500, "x"), State: Pending, Next: h.clock.Now().Add(time.Hour)},
		Outcome{DeliveryKey: key("delivered"), Attempt: attempt(h, 200, ""), State: Delivered},
		Outcome{DeliveryKey: key("old"), Attempt: attempt(h, 500, "x"), State: Failed})
	// Recover since the second delivery's queueing, two a page.
	since := t0.Add(time.Second)
	var got []string
	var failed, waiting int
	q := RecoverQuery{CompanyID: coA, EndpointID: "ep1", Since: since, Limit: 2}
	for range 10 {
		r, err := h.Recover(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		for _, qd := range r.Queued {
			got = append(got, qd.EventID)
			if qd.DueMs != h.clock.Now().UnixMilli() {
				t.Errorf("recovered %s due at %d, want now", qd.EventID, qd.DueMs)
			}
		}
		failed, waiting = failed+r.Failed, waiting+r.Waiting
		if r.Next == "" {
			break
		}
		q.Cursor = r.Next
	}
	if !same(got, []string{"old", "waiting"}) || failed != 1 || waiting != 1 {
		t.Errorf("recovered %v (failed %d, waiting %d); want old and waiting (the failed one is before since)", got, failed, waiting)
	}
	if d := delivery(t, h, key("old")); d.State != Pending || d.Attempts != 0 || d.DoneAt != nil || len(d.Log) != 1 {
		t.Errorf("a recovered delivery: %+v", d)
	}
	if d := delivery(t, h, key("failed")); d.State != Failed {
		t.Errorf("the failed one before since: %+v", d)
	}
	// Replay: whatever the state.
	h.clock.Add(time.Second)
	qd, err := h.Replay(ctx, key("delivered"))
	if err != nil || qd.DueMs != h.clock.Now().UnixMilli() || qd.QueuedMs != t0.Add(2*time.Second).UnixMilli() {
		t.Fatalf("replay: %+v, %v", qd, err)
	}
	if d := delivery(t, h, key("delivered")); d.State != Pending || d.Attempts != 0 || len(d.Log) != 1 {
		t.Errorf("a replayed delivery: %+v", d)
	}
	if _, err := h.Replay(ctx, key("never")); !errors.Is(err, ErrNotFound) {
		t.Errorf("replaying what was never queued: %v, want ErrNotFound", err)
	}
	// Its event's body gone: ErrGone.
	exec(t, h, "DELETE FROM events WHERE event_id = 'due'")
	if _, err := h.Replay(ctx, key("due")); !errors.Is(err, ErrGone) {
		t.Errorf("replaying a delivery whose event is gone: %v, want ErrGone", err)
	}
	if f, _ := h.Fetch(ctx, []DeliveryKey{key("due")}); f[0].Found {
		t.Errorf("fetched a delivery whose body is gone: %+v", f[0])
	}
}
