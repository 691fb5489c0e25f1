package events

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
)

const (
	cli1       = "11000000-0000-4000-8000-000000000001"
	docA       = "21000000-0000-4000-8000-000000000001" // issued, then paid, then transmitted
	docB       = "21000000-0000-4000-8000-000000000002" // issued, then cancelled
	docC       = "21000000-0000-4000-8000-000000000003" // issued already past its due date
	docD       = "21000000-0000-4000-8000-000000000004" // a draft: nothing
	sub1       = "31000000-0000-4000-8000-000000000001"
	sub2       = "31000000-0000-4000-8000-000000000002"
	luandaDate = "2006-01-02"
)

// Each event type comes from a real change in the database, reaches a real
// receiver signed so that the Standard Webhooks library verifies it, with
// the resource as the API's GET answers it, once.
func TestEventsFromRealChanges(t *testing.T) {
	t.Parallel()
	redises(t, testEventsFromRealChanges)
}

func testEventsFromRealChanges(t *testing.T, rdb *redis.Client, prefix string) {
	e := newEnvOn(t, rdb, prefix)
	s := e.service(e.config())
	_, secret := e.endpoint(s)
	e.run(s)

	yesterday := time.Now().In(luanda).AddDate(0, 0, -1).Format(luandaDate)
	nextWeek := time.Now().In(luanda).AddDate(0, 0, 7).Format(luandaDate)
	e.insertClient(cli1, "Cliente Um")
	e.insertDoc(docA, "FT", 1, "issued", nextWeek)
	e.insertDoc(docB, "FT", 2, "issued", nextWeek)
	e.insertDoc(docC, "FT", 3, "issued", yesterday)
	e.insertDoc(docD, "FT", 4, "draft", "")
	e.recv.waitFor(key{ClientCreated, cli1}, key{InvoiceIssued, docA}, key{InvoiceIssued, docB}, key{InvoiceIssued, docC}, key{InvoiceOverdue, docC})

	e.exec(`UPDATE customers SET name = 'Cliente Um, Lda', updated_at = now() WHERE id = $1`, cli1)
	e.setState(docA, "paid")
	e.setState(docB, "cancelled")
	e.exec(`INSERT INTO agt_submissions (id, company_id, submitted_at) VALUES ($1, $2, now())`, sub1, e.company)
	e.exec(`INSERT INTO agt_submission_documents (submission_id, document_id) VALUES ($1, $2)`, sub1, docA)
	e.recv.waitFor(key{ClientUpdated, cli1}, key{InvoicePaid, docA}, key{InvoiceCancelled, docB}, key{InvoiceTransmission, docA})
	// AGT's answer moves no documents.updated_at: it is found all the same.
	e.exec(`UPDATE agt_submissions SET request_id = 'R1', result_code = 0, checked_at = now() WHERE id = $1`, sub1)
	e.exec(`UPDATE agt_submission_documents SET status = 'V' WHERE submission_id = $1`, sub1)
	var got []delivery
	testenv.Eventually(t, "the second invoice.transmission", func() error {
		got = e.recv.deliveries()
		return atLeast(countOf(got, InvoiceTransmission, docA), 2, "invoice.transmission deliveries")
	})

	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]key{}
	for _, d := range got {
		if err := wh.Verify(d.body, d.header); err != nil {
			t.Errorf("%s %s: does not verify: %v", d.parsed.Type, d.id, err)
		}
		k := key{d.parsed.Type, d.id}
		if prev, ok := ids[d.header.Get("webhook-id")]; ok {
			t.Errorf("event %s (%v) delivered twice (first as %v)", d.header.Get("webhook-id"), k, prev)
		}
		ids[d.header.Get("webhook-id")] = k
		if d.header.Get("Content-Type") != "application/json" || d.header.Get("User-Agent") != userAgent {
			t.Errorf("%v: headers %v", k, d.header)
		}
	}
	if n := countOf(got, InvoiceIssued, docD); n != 0 {
		t.Errorf("a draft made %d invoice.issued", n)
	}
	if n := countOf(got, InvoiceOverdue, docA); n != 0 {
		t.Errorf("an invoice due next week made %d invoice.overdue", n)
	}
	e.checkData(got)
}

// checkData checks that the last events carry the resources as GET answers
// them now, that each timestamp is when its change happened (not before the
// endpoint, not in the future), and that each says whose it is.
func (e *env) checkData(got []delivery) {
	t := e.t
	t.Helper()
	ctx := context.Background()
	inv, err := e.store.GetInvoice(ctx, e.company, docA)
	if err != nil {
		t.Fatal(err)
	}
	last := lastOf(got, InvoiceTransmission, docA)
	var data invoicing.Invoice
	if err := json.Unmarshal(last.parsed.Data, &data); err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(inv)
	if string(last.parsed.Data) != string(want) {
		t.Errorf("transmission event's data:\n%s\nGET answers:\n%s", last.parsed.Data, want)
	}
	if data.Transmission == nil || data.Transmission.Status != "VALID" || data.Status != "PAID" {
		t.Errorf("last transmission event: %+v", data.Transmission)
	}
	cl, err := e.store.GetClient(ctx, e.company, cli1)
	if err != nil {
		t.Fatal(err)
	}
	wantCl, _ := json.Marshal(cl)
	if d := lastOf(got, ClientUpdated, cli1); string(d.parsed.Data) != string(wantCl) {
		t.Errorf("client.updated data:\n%s\nGET answers:\n%s", d.parsed.Data, wantCl)
	}
	var overdue invoicing.Invoice
	_ = json.Unmarshal(lastOf(got, InvoiceOverdue, docC).parsed.Data, &overdue)
	if overdue.Status != "OVERDUE" {
		t.Errorf("invoice.overdue carries status %q", overdue.Status)
	}
	// Each event's timestamp is when its change happened: not before the
	// endpoint, not in the future; and each says whose it is.
	for _, d := range got {
		ts, err := time.Parse(time.RFC3339Nano, d.parsed.Timestamp)
		if err != nil || ts.After(time.Now().Add(time.Second)) {
			t.Errorf("%s: timestamp %q", d.parsed.Type, d.parsed.Timestamp)
		}
		if d.parsed.CompanyID != e.company || d.parsed.Mode != invoicing.Test {
			t.Errorf("%s %s: of company %q in mode %q, want %s TEST", d.parsed.Type, d.id, d.parsed.CompanyID, d.parsed.Mode, e.company)
		}
	}
}

func countOf(ds []delivery, t Type, id string) int {
	n := 0
	for _, d := range ds {
		if d.parsed.Type == t && d.id == id {
			n++
		}
	}
	return n
}

func lastOf(ds []delivery, t Type, id string) delivery {
	var out delivery
	for _, d := range ds {
		if d.parsed.Type == t && d.id == id {
			out = d
		}
	}
	return out
}

// invoice.overdue comes from the date turning alone: an invoice issued
// days ago, unchanged since (outside what the change streams read back),
// whose due date passed.
func TestOverdueWhenTheDateTurns(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cfg := e.config()
	created := time.Now().Add(-72 * time.Hour) // the endpoint predates the due date's passing
	cfg.Now = func() time.Time { return created }
	s := e.service(cfg)
	e.endpoint(s)
	cfg.Now = nil
	s = e.service(cfg)
	yesterday := time.Now().In(luanda).AddDate(0, 0, -1).Format(luandaDate)
	e.insertDoc(docC, "FT", 3, "issued", yesterday)
	e.exec(`UPDATE documents SET issued_at = now() - interval '3 days', updated_at = now() - interval '3 days',
created_at = now() - interval '3 days' WHERE id = $1`, docC)
	e.run(s)
	got := e.recv.waitFor(key{InvoiceOverdue, docC})
	if n := countOf(got, InvoiceIssued, docC); n != 0 {
		t.Errorf("an issue three days old made %d invoice.issued", n)
	}
}

// A TEST endpoint gets the sandbox's events, a LIVE one none of them.
func TestModesKeptApart(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := e.service(e.config())
	live := newReceiver(t)
	ctx := context.Background()
	liveEp, _, err := s.CreateWebhook(ctx, NewWebhook{CompanyID: e.company, Mode: invoicing.Live, URL: live.url()})
	if err != nil {
		t.Fatal(err)
	}
	testEp, _ := e.endpoint(s)
	e.run(s)
	e.insertClient(cli1, "Sandbox")
	waitDelivery(t, s, testEp.ID, e.recv, key{ClientCreated, cli1}, "delivered")
	// Both endpoints' deliveries would have been queued in one script.
	if ds, _, err := s.Deliveries(ctx, liveEp.ID, DeliveryQuery{}); err != nil || len(ds) != 0 {
		t.Errorf("the LIVE endpoint has deliveries %+v (%v)", ds, err)
	}
	if n := len(live.deliveries()); n != 0 {
		t.Errorf("the LIVE receiver got %d sandbox events", n)
	}
}

// A suspended company's endpoints keep receiving its events: a suspension
// refuses its API calls, not its deliveries (docs/operators.md, Webhooks).
func TestSuspendedCompanyStillReceives(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := e.service(e.config())
	e.endpoint(s)
	e.run(s)
	e.exec(`UPDATE companies SET status = 'suspended' WHERE id = $1`, e.company)
	e.insertClient(cli1, "Cliente Um")
	e.insertDoc(docA, "FT", 1, "issued", "")
	e.recv.waitFor(key{ClientCreated, cli1}, key{InvoiceIssued, docA})
}
