package events

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
)

// Transactions that commit late, as the platform writes: now() is their
// rows' updated_at, their start. The sweep is kept out of these tests (its
// first pass comes after 25 minutes): what they see delivered, detection
// delivered by following the transactions in flight.

const cliLate = "13000000-0000-4000-8000-000000000001"

// lateConfig is the tests' configuration with no sweep within a test's time.
func (e *env) lateConfig() Config {
	cfg := e.config()
	cfg.Sweep = 50 * time.Minute
	return cfg
}

// begin opens a transaction of the platform's on a connection of its own
// (not the pool's, which the other writes share).
func (e *env) begin() pgx.Tx {
	e.t.Helper()
	ctx := context.Background()
	conn, err := pgx.ConnectConfig(ctx, e.db.Config().ConnConfig.Copy())
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = conn.Close(ctx) })
	tx, err := conn.Begin(ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = tx.Rollback(ctx) })
	return tx
}

// changeClient updates a client in tx, at the transaction's start, and
// returns that start.
func changeClient(t *testing.T, tx pgx.Tx, id, name string) time.Time {
	t.Helper()
	var at time.Time
	if err := tx.QueryRow(context.Background(), `UPDATE customers SET name = $2, updated_at = now() WHERE id = $1 RETURNING updated_at`, id, name).Scan(&at); err != nil {
		t.Fatal(err)
	}
	return at.UTC()
}

// waitHeld waits until the clients' watermark is held at start: detection
// follows the transaction open since then.
func (e *env) waitHeld(s *Service, start time.Time) {
	e.t.Helper()
	want := encodeMark(position(start, ""))
	testenv.Eventually(e.t, "the clients' watermark held at the open transaction's start", func() error {
		return testenv.Want(e.rdb.Get(context.Background(), s.l.watermark(invoicing.Test, "clients")).Val(), want, "watermark")
	})
}

// onceEach fails the test for an event delivered twice.
func onceEach(t *testing.T, got []delivery) {
	t.Helper()
	seen := map[string]key{}
	for _, d := range got {
		id := d.header.Get("webhook-id")
		if prev, ok := seen[id]; ok {
			t.Errorf("event %s (%v) delivered twice", id, prev)
		}
		seen[id] = key{d.parsed.Type, d.id}
	}
}

// flowWhile commits a new client every few hundred milliseconds until
// until, and waits for each to be delivered before the next: they are
// delivered while the transaction is open, not held behind it.
func (e *env) flowWhile(until time.Time, first int) int {
	e.t.Helper()
	n := 0
	for ; n == 0 || time.Now().Before(until); n++ {
		id := fmt.Sprintf("14000000-0000-4000-8000-%012d", first+n)
		e.insertClient(id, "Entretanto")
		e.recv.waitFor(key{ClientCreated, id})
		time.Sleep(200 * time.Millisecond)
	}
	return n
}

// A transaction that updates a client and pays an invoice at its start and
// commits long after later ones is delivered once, after its commit; the
// changes committed meanwhile are delivered meanwhile.
func TestLateCommit(t *testing.T) {
	t.Parallel()
	for _, open := range []time.Duration{8 * time.Second, 40 * time.Second} {
		t.Run(open.String(), func(t *testing.T) {
			t.Parallel()
			testLateCommit(t, open)
		})
	}
}

func testLateCommit(t *testing.T, open time.Duration) {
	e := newEnv(t)
	cfg := e.lateConfig()
	reg := prometheus.NewRegistry()
	cfg.Metrics = reg
	s := e.service(cfg)
	s.statsKeep = 0 // each scrape reads Redis
	e.endpoint(s)
	e.run(s)
	nextWeek := time.Now().In(luanda).AddDate(0, 0, 7).Format(luandaDate)
	e.insertClient(cliLate, "Cliente")
	e.insertDoc(docA, "FT", 1, "issued", nextWeek)
	e.recv.waitFor(key{ClientCreated, cliLate}, key{InvoiceIssued, docA})

	tx := e.begin()
	start := changeClient(t, tx, cliLate, "Mudado no início")
	if _, err := tx.Exec(context.Background(), `UPDATE documents SET state = 'paid', updated_at = now() WHERE id = $1`, docA); err != nil {
		t.Fatal(err)
	}
	n := e.flowWhile(time.Now().Add(open), 0)
	e.waitHeld(s, start)
	if got := e.recv.deliveries(); countOf(got, ClientUpdated, cliLate)+countOf(got, InvoicePaid, docA) != 0 {
		t.Fatal("a change of a transaction still open was delivered")
	}
	// The lag is the read's, not the watermark's: the transaction holds
	// back its own change alone. The oldest transaction's age says why the
	// watermark stays.
	testenv.Eventually(t, "the oldest transaction's age reported", func() error {
		if v := gathered(t, reg)[`gateway_events_oldest_transaction_seconds{mode="TEST"}`]; v <= 0 {
			return testenv.Want(v, 1, "oldest transaction (any positive)")
		}
		return nil
	})
	lag, held := gathered(t, reg)[`gateway_events_detector_lag_seconds{mode="TEST",stream="clients"}`], time.Since(start).Seconds()
	if lag >= held/2 {
		t.Errorf("the clients' lag is %v s, near the watermark's (%v s): not the read's", lag, held)
	}
	if err := tx.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	committed := time.Now()
	e.recv.waitFor(key{ClientUpdated, cliLate}, key{InvoicePaid, docA})
	t.Logf("open %s, %d changes delivered meanwhile; its own delivered %s after its commit", open, n, time.Since(committed).Round(time.Millisecond))
	e.insertClient(cli1, "Depois")
	onceEach(t, e.recv.waitFor(key{ClientCreated, cli1}))
}

// A change rolled back makes no event: detection followed its transaction
// (the watermark held at its start) and read its start once it ended.
func TestRolledBackChangeMakesNoEvent(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := e.service(e.lateConfig())
	e.endpoint(s)
	e.run(s)
	e.insertClient(cliLate, "Cliente")
	e.recv.waitFor(key{ClientCreated, cliLate})
	tx := e.begin()
	start := changeClient(t, tx, cliLate, "Nunca")
	e.flowWhile(time.Now().Add(time.Second), 0)
	e.waitHeld(s, start)
	if err := tx.Rollback(context.Background()); err != nil {
		t.Fatal(err)
	}
	// A change committed after the rollback is read by a tick that saw it
	// end: when it arrives, the rolled-back one's start was read.
	e.insertClient(cli1, "Depois")
	got := e.recv.waitFor(key{ClientCreated, cli1})
	if n := countOf(got, ClientUpdated, cliLate); n != 0 {
		t.Errorf("a rolled-back change made %d client.updated", n)
	}
	onceEach(t, got)
}

// Slow transactions begun one after the other and committed in the
// opposite order, with quick ones between, lose nothing and duplicate
// nothing.
func TestInterleavedSlowCommits(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := e.service(e.lateConfig())
	e.endpoint(s)
	e.run(s)
	const slow = 4
	ids := make([]string, slow)
	for i := range ids {
		ids[i] = fmt.Sprintf("15000000-0000-4000-8000-%012d", i)
		e.insertClient(ids[i], "Lento")
	}
	var want []key
	for _, id := range ids {
		want = append(want, key{ClientCreated, id})
	}
	e.recv.waitFor(want...)
	txs := make([]pgx.Tx, slow)
	next := 0
	for i := range txs {
		txs[i] = e.begin()
		changeClient(t, txs[i], ids[i], fmt.Sprintf("Lento %d", i))
		next += e.flowWhile(time.Now().Add(300*time.Millisecond), next)
	}
	want = nil
	for i := slow - 1; i >= 0; i-- {
		if err := txs[i].Commit(context.Background()); err != nil {
			t.Fatal(err)
		}
		want = append(want, key{ClientUpdated, ids[i]})
		next += e.flowWhile(time.Now().Add(300*time.Millisecond), next)
	}
	e.recv.waitFor(want...)
	e.insertClient(cli1, "Depois")
	got := e.recv.waitFor(key{ClientCreated, cli1})
	for _, k := range want {
		if n := countOf(got, k.typ, k.id); n != 1 {
			t.Errorf("%v delivered %d times, want once", k, n)
		}
	}
	onceEach(t, got)
}

// A restart while a transaction is open, or its watermarks lost then (the
// markers kept), reads again from where detection resumes: the late
// change is delivered once, and what was delivered before is not again.
func TestLateCommitAcrossARestart(t *testing.T) {
	t.Parallel()
	for _, lost := range []bool{false, true} {
		t.Run(map[bool]string{false: "restart", true: "watermarks lost"}[lost], func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			cfg := e.lateConfig()
			s := e.service(cfg)
			e.endpoint(s)
			stop := e.run(s)
			e.insertClient(cliLate, "Cliente")
			e.recv.waitFor(key{ClientCreated, cliLate})
			tx := e.begin()
			start := changeClient(t, tx, cliLate, "Mudado")
			n := e.flowWhile(time.Now().Add(time.Second), 0)
			e.waitHeld(s, start)
			stop()
			if lost {
				e.deleteKeys("wm:")
			}
			e.run(e.service(cfg))
			n += e.flowWhile(time.Now().Add(time.Second), n)
			if err := tx.Commit(context.Background()); err != nil {
				t.Fatal(err)
			}
			e.recv.waitFor(key{ClientUpdated, cliLate})
			e.insertClient(cli1, "Depois")
			onceEach(t, e.recv.waitFor(key{ClientCreated, cli1}))
		})
	}
}

// A client the gateway creates records the time it took before its
// insert, which may wait (here behind another session's insert of the same
// id, rolled back a second later: within the query's deadline): the Store lists it in flight meanwhile, and
// it is delivered once it is made, the sweep out of the way.
func TestGatewaysOwnCreateThatWaits(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := e.service(e.lateConfig())
	e.endpoint(s)
	e.run(s)
	tx := e.begin()
	if _, err := tx.Exec(context.Background(), `INSERT INTO customers (id, company_id, name) VALUES ($1, $2, 'Rival')`, cliLate, e.company); err != nil {
		t.Fatal(err)
	}
	// Its start apart from the create's, so that no read of a start reads both.
	time.Sleep(300 * time.Millisecond)
	made := make(chan error, 1)
	go func() {
		_, err := e.store.CreateClient(context.Background(), e.company, invoicing.NewClient{ID: cliLate, Name: "Pela API"})
		made <- err
	}()
	e.flowWhile(time.Now().Add(time.Second), 0)
	if err := tx.Rollback(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := <-made; err != nil {
		t.Fatal(err)
	}
	e.recv.waitFor(key{ClientCreated, cliLate})
	e.insertClient(cli1, "Depois")
	onceEach(t, e.recv.waitFor(key{ClientCreated, cli1}))
}
