package admin_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/invoicing-ao/gateway/internal/testenv"
)

// A burst of 10,000 changes committed at once (detection queues them 500
// to a millisecond) is counted whole by an endpoint's statistics and listed
// whole by its delivery log, each delivery once; one more event makes the
// statistics say they are of the newest 10,000.
func TestWebhookLogAfterABurst(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	in := w.start()
	auth := map[string]string{"Authorization": "Bearer " + in.adminToken, "X-Actor": "ana@platform"}
	// Disabled: its deliveries wait, so that the test reads the log, not
	// the receiver.
	ep := do(t, in.admin.URL, req{Method: "POST", Path: "/admin/v1/companies/" + coA + "/webhooks",
		Body: `{"mode":"TEST","url":"http://127.0.0.1:9/hook","types":["client.created"],"enabled":false}`, Header: auth})
	if ep.Status != http.StatusCreated {
		t.Fatalf("create: %d %s", ep.Status, ep.Body)
	}
	id, _ := ep.json(t)["id"].(string)
	const n = 10000
	addClients(t, w.test, n)
	in.runEvents(t)
	stats := waitStats(t, in, id, auth, n)
	if stats["pending"] != float64(n) || stats["complete"] != true {
		t.Fatalf("stats after the burst: %v", stats)
	}
	seen := map[string]bool{}
	for cursor := ""; ; {
		r := do(t, in.admin.URL, req{Path: "/admin/v1/webhooks/" + id + "/deliveries?limit=100&cursor=" + url.QueryEscape(cursor), Header: auth})
		var page struct {
			Data []struct{ EventID string }
			Next *string
		}
		decode(t, r, &page)
		for _, d := range page.Data {
			if seen[d.EventID] {
				t.Fatalf("%s listed twice", d.EventID)
			}
			seen[d.EventID] = true
		}
		if page.Next == nil {
			break
		}
		cursor = *page.Next
	}
	if len(seen) != n {
		t.Fatalf("the delivery log listed %d of %d", len(seen), n)
	}
	addClients(t, w.test, 1)
	if stats := waitStats(t, in, id, auth, n, false); stats["complete"] != false {
		t.Fatalf("stats of %d events: %v", n+1, stats)
	}
}

// addClients commits n new clients of company A at once.
func addClients(t *testing.T, dbURL string, n int) {
	t.Helper()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if _, err := pool.Exec(ctx, `INSERT INTO customers (id, company_id, name) SELECT gen_random_uuid(), $1, 'Cliente ' || i FROM generate_series(1, $2) i`,
		coA, n); err != nil {
		t.Fatal(err)
	}
}

// waitStats waits (generously) until the endpoint's statistics count want
// deliveries, and complete is as wanted (true when not given).
func waitStats(t *testing.T, in *instance, id string, auth map[string]string, want int, complete ...bool) map[string]any {
	t.Helper()
	wantComplete := len(complete) == 0 || complete[0]
	var s map[string]any
	testenv.Eventually(t, fmt.Sprintf("statistics of %d deliveries (complete %v)", want, wantComplete), func() error {
		r := do(t, in.admin.URL, req{Path: "/admin/v1/webhooks/" + id + "/stats", Header: auth})
		if r.Status != http.StatusOK {
			t.Fatalf("stats: %d %s", r.Status, r.Body)
		}
		s = r.json(t)
		if s["deliveries"] != float64(want) || s["complete"] != wantComplete {
			return fmt.Errorf("stats: %s", r.Body)
		}
		return nil
	})
	return s
}

func decode(t *testing.T, r resp, v any) {
	t.Helper()
	if r.Status != http.StatusOK {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("%v: %s", err, r.Body)
	}
}

// A receiver down while a client is created: its delivery fails and waits
// an hour for its retry. Once the receiver is fixed, one recovery through
// the admin API sends it now and says it was waiting; it arrives.
func TestRecoverSendsWaitingDeliveries(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	in := w.start(withRetries(time.Hour))
	recv := newReceiver(t) // answers 503 until it trusts the secret
	auth := map[string]string{"Authorization": "Bearer " + in.adminToken, "X-Actor": "ana@platform"}
	created := do(t, in.admin.URL, req{Method: "POST", Path: "/admin/v1/companies/" + coA + "/webhooks",
		Body: `{"mode":"TEST","url":"` + recv.srv.URL + `/hooks","types":["client.created"]}`, Header: auth})
	if created.Status != http.StatusCreated {
		t.Fatalf("create: %d %s", created.Status, created.Body)
	}
	id, _ := created.json(t)["id"].(string)
	secret, _ := created.json(t)["secret"].(string)
	in.runEvents(t)
	start := time.Now()
	addClients(t, w.test, 1)
	var page struct {
		Data []struct {
			EventID, State string
			Attempts       int
			NextAttemptAt  *time.Time
		}
	}
	testenv.Eventually(t, "the delivery's failed attempt", func() error {
		decode(t, do(t, in.admin.URL, req{Path: "/admin/v1/webhooks/" + id + "/deliveries", Header: auth}), &page)
		if len(page.Data) == 0 || page.Data[0].Attempts == 0 {
			return fmt.Errorf("deliveries: %+v", page)
		}
		return nil
	})
	if d := page.Data[0]; d.State != "pending" || d.NextAttemptAt == nil || d.NextAttemptAt.Before(time.Now().Add(50*time.Minute)) {
		t.Fatalf("not waiting for its retry: %+v", d)
	}
	recv.trust(t, secret)
	r := do(t, in.admin.URL, req{Method: "POST", Path: "/admin/v1/webhooks/" + id + "/recover",
		Body: `{"since":"` + start.Add(-time.Minute).UTC().Format(time.RFC3339) + `"}`, Header: auth})
	if v := r.json(t); r.Status != http.StatusOK || v["queued"] != 1.0 || v["failed"] != 0.0 || v["waiting"] != 1.0 {
		t.Fatalf("recover: %d %s", r.Status, r.Body)
	}
	testenv.Eventually(t, "the recovered delivery", func() error {
		if recv.count(page.Data[0].EventID) == 0 {
			return errors.New("not arrived")
		}
		return nil
	})
}
