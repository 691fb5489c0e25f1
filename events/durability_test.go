package events

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
)

// shiftedSource is the platform's database with its clock moved ahead: the
// detector then sees every row as that much older, as it does after an
// outage that long, without a test waiting for it.
type shiftedSource struct {
	Source
	by atomic.Int64 // ns
}

func (s *shiftedSource) DatabaseNow(ctx context.Context) (time.Time, error) {
	t, err := s.Source.DatabaseNow(ctx)
	return t.Add(time.Duration(s.by.Load())), err
}

// InFlight shifts the clock alone: the transactions' starts are the rows'
// times, which stay where they are.
func (s *shiftedSource) InFlight(ctx context.Context) (invoicing.Horizon, error) {
	h, err := s.Source.InFlight(ctx)
	h.Now = h.Now.Add(time.Duration(s.by.Load()))
	return h, err
}

func (s *shiftedSource) shift(d time.Duration) { s.by.Add(int64(d)) }

// shifted points cfg's TEST mode at e's database through a shiftedSource.
func (e *env) shifted(cfg *Config) *shiftedSource {
	src := &shiftedSource{Source: e.store.Changes()}
	cfg.Sources = map[invoicing.Mode]Source{invoicing.Test: src}
	return src
}

// Every instance stopped (or Redis out of reach) for longer than the sweep
// reads back: the changes made meanwhile are all sent when detection comes
// back, issues and creations included, a backlog of several pages too, and
// an invoice issued and paid meanwhile makes both events.
func TestOutageLongerThanSweep(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cfg := e.config()
	src := e.shifted(&cfg)
	s := e.service(cfg)
	e.endpoint(s)
	stop := e.run(s)
	e.insertClient(cli1, "Antes")
	e.recv.waitFor(key{ClientCreated, cli1})
	waitDelivery(t, s, mustEndpoint(t, s, e.company), e.recv, key{ClientCreated, cli1}, "delivered")
	stop()

	// Meanwhile: more than a page of clients, a client created then
	// changed, an invoice issued, and one issued then paid.
	const cliX = "12000000-0000-4000-8000-000000000001"
	var want []key
	values := make([]string, 0, pageSize+100)
	for i := range pageSize + 100 {
		id := fmt.Sprintf("11000000-0000-4000-8000-%012d", i+100)
		values = append(values, fmt.Sprintf("('%s', '%s', 'Cliente %d')", id, e.company, i))
		want = append(want, key{ClientCreated, id})
	}
	e.exec(`INSERT INTO customers (id, company_id, name) VALUES ` + strings.Join(values, ", "))
	e.insertClient(cliX, "Durante")
	e.exec(`UPDATE customers SET name = 'Durante, Lda', updated_at = now() WHERE id = $1`, cliX)
	nextWeek := time.Now().In(luanda).AddDate(0, 0, 7).Format(luandaDate)
	e.insertDoc(docA, "FT", 1, "issued", nextWeek)
	e.insertDoc(docB, "FT", 2, "issued", nextWeek)
	e.setState(docB, "paid")
	want = append(want, key{ClientCreated, cliX}, key{ClientUpdated, cliX}, key{InvoiceIssued, docA},
		key{InvoiceIssued, docB}, key{InvoicePaid, docB})
	src.shift(time.Hour) // the outage lasted an hour: far past Sweep+Settle

	e.run(e.service(cfg))
	got := e.recv.waitFor(want...)
	ids := map[string]int{}
	for _, d := range got {
		if ids[d.header.Get("webhook-id")]++; ids[d.header.Get("webhook-id")] == 2 {
			t.Errorf("%s of %s sent twice", d.parsed.Type, d.id)
		}
	}
}

// mustEndpoint is the company's only TEST endpoint's id.
func mustEndpoint(t *testing.T, s *Service, company string) string {
	t.Helper()
	eps, err := s.ListWebhooks(context.Background(), company)
	if err != nil || len(eps) != 1 {
		t.Fatalf("endpoints %+v (%v), want one", eps, err)
	}
	return eps[0].ID
}

// An event sent is not sent again when a later change of its row finds it
// again after the event itself is gone (past the retention): its id is
// remembered for Remember. Past that, it would be.
func TestEventRememberedPastRetention(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cfg, clock := e.clocked()
	s := e.service(cfg)
	ep, _ := e.endpoint(s, "invoice.paid", "invoice.issued")
	e.run(s)
	nextWeek := time.Now().In(luanda).AddDate(0, 0, 7).Format(luandaDate)
	e.insertDoc(docA, "FT", 1, "issued", nextWeek)
	e.setState(docA, "paid")
	waitDelivery(t, s, ep.ID, e.recv, key{InvoicePaid, docA}, "delivered")

	// The retention ends: the event and its records expire (Redis does that
	// in real time; here they are deleted, and the clock moved).
	clock.Add(cfg.Retention + time.Minute)
	e.deleteKeys("msg:", "d:", "a:")
	// An unrelated change of the paid invoice, then one that shows it was read.
	e.exec(`UPDATE documents SET customer_name = 'Outro', updated_at = now() WHERE id = $1`, docA)
	e.insertDoc(docB, "FT", 2, "issued", nextWeek)
	got := e.recv.waitFor(key{InvoiceIssued, docB})
	if n := countOf(got, InvoicePaid, docA); n != 1 {
		t.Fatalf("invoice.paid sent %d times, want once", n)
	}
	if n := countOf(got, InvoiceIssued, docA); n != 1 {
		t.Fatalf("invoice.issued sent %d times, want once", n)
	}

	// Markers are bounded: past Remember (and its generation), the id is
	// forgotten, and a change of the row sends the event again.
	clock.Add(s.q.remember + s.q.markerPeriod())
	e.deleteKeys("msg:", "d:", "a:")
	e.exec(`UPDATE documents SET customer_name = 'Outro ainda', updated_at = now() WHERE id = $1`, docA)
	testenv.Eventually(t, "invoice.paid sent again past Remember", func() error {
		got = e.recv.deliveries()
		return atLeast(countOf(got, InvoicePaid, docA), 2, "invoice.paid deliveries")
	})
	if n := countOf(got, InvoicePaid, docA); n != 2 {
		t.Fatalf("past Remember, invoice.paid sent %d times, want 2", n)
	}
	e.checkExpiries()
}

// deleteKeys deletes the events' keys of the given kinds (as expiry would).
func (e *env) deleteKeys(kinds ...string) {
	e.t.Helper()
	ctx := context.Background()
	for _, k := range e.keys() {
		for _, kind := range kinds {
			if strings.HasPrefix(strings.TrimPrefix(k, e.prefix+"{events}:"), kind) {
				if err := e.rdb.Del(ctx, k).Err(); err != nil {
					e.t.Fatal(err)
				}
			}
		}
	}
}

// keys lists the events' keys of the test.
func (e *env) keys() []string {
	e.t.Helper()
	keys, err := e.rdb.Keys(context.Background(), e.prefix+"{events}:*").Result()
	if err != nil {
		e.t.Fatal(err)
	}
	return keys
}

// checkExpiries checks that every key kept for a time (events, deliveries,
// their attempts, markers) has an expiry: none is left behind for ever.
func (e *env) checkExpiries() {
	e.t.Helper()
	n := 0
	for _, k := range e.keys() {
		kind, _, _ := strings.Cut(strings.TrimPrefix(k, e.prefix+"{events}:"), ":")
		switch kind {
		case "msg", "d", "a", "seen":
			n++
			if ttl, err := e.rdb.PTTL(context.Background(), k).Result(); err != nil || ttl <= 0 {
				e.t.Errorf("%s: PTTL %v (%v), want an expiry", k, ttl, err)
			}
		}
	}
	if n == 0 {
		e.t.Error("no key of the kinds kept for a time")
	}
}

// A disabled endpoint's events wait for it a retention, no longer: its
// queue and log are trimmed of older ones. A delivery whose record expired
// before it was claimed is not written again (without an expiry).
func TestQueueTrimmedAndRecordsExpire(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cfg, clock := e.clocked()
	s := e.service(cfg)
	ep, _ := e.endpoint(s)
	off, on := false, true
	if _, err := s.UpdateWebhook(context.Background(), ep.ID, Patch{Enabled: &off}); err != nil {
		t.Fatal(err)
	}
	e.run(s)
	const cli2, cli3 = "11000000-0000-4000-8000-000000000002", "11000000-0000-4000-8000-000000000003"
	e.insertClient(cli1, "Um")
	e.insertClient(cli2, "Dois")
	e.waitQueue(s, ep.ID, 2)

	// Past the retention, what waited is trimmed (the sweep's housekeeping),
	// its records having expired.
	clock.Add(cfg.Retention + time.Minute)
	e.deleteKeys("msg:", "d:", "a:")
	e.waitQueue(s, ep.ID, 0)
	if n := e.rdb.ZCard(context.Background(), s.l.log(ep.ID)).Val(); n != 0 {
		t.Errorf("the log keeps %d entries past the retention", n)
	}

	// Within the retention, a delivery whose records expired before it was
	// claimed (Redis's clock ahead of this one's) ends as expired, and
	// nothing is written for it.
	e.insertClient(cli3, "Três")
	e.waitQueue(s, ep.ID, 1)
	e.deleteKeys("msg:", "d:", "a:")
	e.recv.setStatus(http.StatusServiceUnavailable) // a later event is retried: its record keeps its expiry
	if _, err := s.UpdateWebhook(context.Background(), ep.ID, Patch{Enabled: &on}); err != nil {
		t.Fatal(err)
	}
	e.waitQueue(s, ep.ID, 0)
	ctx := context.Background()
	for _, id := range []string{cli1, cli2, cli3} {
		evID := eventID(invoicing.Test, e.company, ClientCreated, id, "")
		if n := e.rdb.Exists(ctx, s.l.delivery(ep.ID, evID), s.l.attempts(ep.ID, evID)).Val(); n != 0 {
			t.Errorf("client %s: the expired delivery's records were written again", id)
		}
	}
	if n := len(e.recv.deliveries()); n != 0 {
		t.Errorf("%d deliveries of expired events", n)
	}
	const cli4 = "11000000-0000-4000-8000-000000000004"
	e.insertClient(cli4, "Quatro")
	waitDeliveryThat(t, s, ep.ID, e.recv, key{ClientCreated, cli4}, func(d Delivery) bool { return d.State == "pending" && d.Attempts == 1 })
	e.checkExpiries()
}

// waitQueue waits until an endpoint has n deliveries queued or in flight.
func (e *env) waitQueue(s *Service, ep string, n int64) {
	e.t.Helper()
	ctx := context.Background()
	testenv.Eventually(e.t, "the endpoint's deliveries queued or in flight", func() error {
		q, l := e.rdb.ZCard(ctx, s.l.queue(ep)).Val(), e.rdb.ZCard(ctx, s.l.lease(ep)).Val()
		return testenv.Want(q+l, n, fmt.Sprintf("endpoint %s: %d queued + %d in flight", ep, q, l))
	})
}

// New refuses a retention shorter than the sweep can find a change again,
// and markers kept for less than the retention or twice Recovery.
func TestNewRefusesShortRetention(t *testing.T) {
	t.Parallel()
	rdb, _ := testenv.Miniredis(t)
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{Schedule: []time.Duration{time.Second}, Retention: 5 * time.Minute, Sweep: 10 * time.Minute}, "Sweep+Settle"},
		{Config{Remember: 6 * 24 * time.Hour}, "Remember"},
		{Config{Remember: 8 * 24 * time.Hour, Recovery: 5 * 24 * time.Hour}, "twice Recovery"},
	} {
		c.cfg.Redis = rdb
		if _, err := New(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an error about %s", c.cfg, err, c.want)
		}
	}
	s, err := New(Config{Redis: rdb, Recovery: 60 * 24 * time.Hour})
	if err != nil || s.q.remember != 120*24*time.Hour {
		t.Errorf("Remember's default with a long Recovery: %v (%v)", s.q.remember, err)
	}
}
