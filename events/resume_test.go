package events

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
)

// Redis lost right after an export, and the export imported at once: no
// event delivered before the export is delivered again. Neither the sweep
// (whose window still holds the changes, and whose markers were lost) nor
// the overdue invoices (whose day had been done) read back what the
// export's resume point says was delivered, and a client changed after the
// import is not reported created again; the changes after the import are
// delivered once.
func TestImportResendsNothingDeliveredBeforeTheExport(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cfg := e.config()
	cfg.Secrets = keyring(t, newSealKey(t))
	cfg.Sweep, cfg.Retention = time.Hour, 2*time.Hour // the sweep's window holds every change of the test
	s := e.service(cfg)
	ep, _ := e.endpoint(s)
	e.run(s)
	yesterday := time.Now().In(luanda).AddDate(0, 0, -1).Format(luandaDate)
	nextWeek := time.Now().In(luanda).AddDate(0, 0, 7).Format(luandaDate)
	const cli2, cli3, cliAfter = "11000000-0000-4000-8000-000000000002", "11000000-0000-4000-8000-000000000003", "11000000-0000-4000-8000-000000000009"
	e.insertClient(cli1, "Um")
	e.insertClient(cli2, "Dois")
	e.insertClient(cli3, "Três")
	e.insertDoc(docA, "FT", 1, "issued", nextWeek)
	e.insertDoc(docC, "FT", 3, "issued", yesterday)
	before := []key{{ClientCreated, cli1}, {ClientCreated, cli2}, {ClientCreated, cli3}, {InvoiceIssued, docA}, {InvoiceIssued, docC}, {InvoiceOverdue, docC}}
	e.recv.waitFor(before...)
	e.setState(docA, "paid")
	before = append(before, key{InvoicePaid, docA})
	for _, k := range before {
		waitDelivery(t, s, ep.ID, e.recv, k, "delivered")
	}
	ctx := context.Background()
	// The overdue loop reads once a second at most: the event above came
	// from the invoice's change; the export's overdue resume point is the
	// loop's watermark.
	testenv.Eventually(t, "the overdue loop's first read", func() error {
		return testenv.Want(e.rdb.Exists(ctx, s.l.watermark(invoicing.Test, "overdue")).Val(), int64(1), "overdue watermark")
	})
	exported, err := s.ExportState(ctx)
	if err != nil || exported.ResumeFrom[invoicing.Test].IsZero() || exported.OverdueFrom[invoicing.Test] == "" {
		t.Fatalf("export: %+v %v", exported, err)
	}
	if e.loseState(ctx) == 0 {
		t.Fatal("nothing lost")
	}
	importState(t, s, exported)
	e.insertClient(cliAfter, "Depois")
	e.exec(`UPDATE customers SET name = 'Um, Lda', updated_at = now() WHERE id = $1`, cli1) // read again: its creation was sent
	after := []key{{ClientCreated, cliAfter}, {ClientUpdated, cli1}}
	for _, k := range after {
		waitDelivery(t, s, ep.ID, e.recv, k, "delivered")
	}

	// The overdue loop has passed the import once its watermark is today's
	// again; the sweep is made here, as its loop would (every 30 minutes).
	today := time.Now().In(luanda).Format(luandaDate)
	testenv.Eventually(t, "the overdue invoices read after the import", func() error {
		return testenv.Want(e.rdb.Get(ctx, s.l.watermark(invoicing.Test, "overdue")).Val(), today+"||", "overdue watermark")
	})
	e.sweepNow(s, cfg.Settle)
	testenv.Eventually(t, "nothing left to deliver", func() error {
		q, l := e.rdb.ZCard(ctx, s.l.queue(ep.ID)).Val(), e.rdb.ZCard(ctx, s.l.lease(ep.ID)).Val()
		return testenv.Want(q+l, int64(0), "deliveries queued or under way")
	})

	accepted := map[key]int{}
	for _, d := range e.recv.deliveries() {
		if d.status == http.StatusOK {
			accepted[key{d.parsed.Type, d.id}]++
		}
	}
	dup := 0
	for _, k := range append(before, after...) {
		if n := accepted[k]; n != 1 {
			dup += n - 1
			t.Errorf("%v accepted %d times, want once", k, n)
		}
	}
	t.Logf("%d events delivered before the export, %d after the import: %d delivered again", len(before), len(after), dup)
}

// sweepNow makes a sweep of the TEST mode now, as its loop does every
// Sweep/2.
func (e *env) sweepNow(s *Service, settle time.Duration) {
	e.t.Helper()
	ctx := context.Background()
	targets, err := s.loadTargets(ctx, invoicing.Test, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	dbNow, err := e.store.Changes().DatabaseNow(ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := s.det.sweepOnce(ctx, e.store.Changes(), invoicing.Test, targets, dbNow, dbNow.Add(-settle)); err != nil {
		e.t.Fatal(err)
	}
}
