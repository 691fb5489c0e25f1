package main

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
)

// With --changes N, the load is joined by N real changes committed in the
// platform's database (--database), so that the gateway detects them and
// delivers their events while it serves the API: docs/performance.md's
// memory target, a backlog of events draining under load. They are the
// changes of that measurement, in its proportions: issued documents paid
// (36.603 %), clients changed (20 %) and clients created (the rest), spread
// over the loaded companies in turn. Each row is changed once, because
// detection reads a row's state, not its history: a row changed twice
// within its settle makes one event, and the expected count would be wrong.
// What the companies lack (issued documents, clients) is created instead.

// The shares of N, as in the measurement of docs/performance.md: there,
// every issued document and every client of the 1,000 small companies of
// the large data set, and 43,397 new clients, made 100,000 changes.
const (
	paidShare    = 0.36603
	changedShare = 0.20
)

type changeKind int

const (
	payInvoice changeKind = iota
	changeClient
	createClient
)

var changeNames = [...]string{"invoices paid", "clients changed", "clients created"}

// changeCounts are how many changes of each kind (changeKind).
type changeCounts [3]int

func (c changeCounts) total() int { return c[0] + c[1] + c[2] }

func (c changeCounts) String() string {
	return fmt.Sprintf("%d %s, %d %s, %d %s", c[0], changeNames[0], c[1], changeNames[1], c[2], changeNames[2])
}

// planChanges splits n changes by the shares, given the issued documents and
// live clients there are to change; what they lack is created.
func planChanges(n, issued, clients int) changeCounts {
	paid := min(int(math.Round(float64(n)*paidShare)), issued, n)
	changed := min(int(math.Round(float64(n)*changedShare)), clients, n-paid)
	return changeCounts{paid, changed, n - paid - changed}
}

// changeBatch is rows [from, to) of one kind, committed in one transaction.
type changeBatch struct {
	kind     changeKind
	from, to int
}

// changeBatches cuts c into batches of at most size rows, the kinds in turn,
// so that the three kinds of event are queued side by side rather than one
// kind after another.
func changeBatches(c changeCounts, size int) []changeBatch {
	size = max(size, 1)
	var out []changeBatch
	var next changeCounts
	for added := true; added; {
		added = false
		for k := range c {
			if next[k] < c[k] {
				to := min(next[k]+size, c[k])
				out = append(out, changeBatch{changeKind(k), next[k], to})
				next[k], added = to, true
			}
		}
	}
	return out
}

// changeSet is the rows a run will change, picked before the load so that
// picking them does not weigh on it.
type changeSet struct {
	companies []string
	invoices  []string // issued documents, to pay
	clients   []string // live clients, to change
	plan      changeCounts
	done      changeCounts // committed
	took      time.Duration
	batches   int
	err       error
}

// The rows to change, taken from each company in turn (the first of each,
// then the second...), so that every endpoint gets its share of events.
const pickInTurn = `SELECT id::text FROM (
  SELECT id, company_id, row_number() OVER (PARTITION BY company_id ORDER BY id) AS turn
  FROM %s WHERE company_id = ANY($1::uuid[]) AND %s) AS t
ORDER BY turn, company_id LIMIT $2`

// pickChanges picks the rows of n changes among companies' rows.
func pickChanges(ctx context.Context, conn *pgx.Conn, companies []string, n int) (*changeSet, error) {
	s := &changeSet{companies: companies}
	pick := func(table, where string, want int) ([]string, error) {
		rows, err := conn.Query(ctx, fmt.Sprintf(pickInTurn, table, where), companies, want)
		if err != nil {
			return nil, fmt.Errorf("picking the %s to change: %w", table, err)
		}
		return pgx.CollectRows(rows, pgx.RowTo[string])
	}
	want := planChanges(n, n, n)
	var err error
	if s.invoices, err = pick("documents", "state = 'issued'", want[payInvoice]); err != nil {
		return nil, err
	}
	if s.clients, err = pick("customers", "deleted_at IS NULL", want[changeClient]); err != nil {
		return nil, err
	}
	s.plan = planChanges(n, len(s.invoices), len(s.clients))
	return s, nil
}

// commit makes one batch's changes in one statement (its own transaction)
// and returns the rows it changed. The changes carry the database's clock
// (now()), as the platform's own writes do; a new client's creation and
// update times are the same instant, so that it makes client.created alone.
func (s *changeSet) commit(ctx context.Context, conn *pgx.Conn, b changeBatch) (int, error) {
	var q string
	var args []any
	switch b.kind {
	case payInvoice:
		q = `UPDATE documents SET state = 'paid', updated_at = now() WHERE id = ANY($1::uuid[]) AND state = 'issued'`
		args = []any{s.invoices[b.from:b.to]}
	case changeClient:
		q = `UPDATE customers SET email = 'carga+' || to_char(now(), 'YYYYMMDDHH24MISSUS') || '@example.ao', updated_at = now()
WHERE id = ANY($1::uuid[]) AND deleted_at IS NULL`
		args = []any{s.clients[b.from:b.to]}
	case createClient:
		cos, names := make([]string, 0, b.to-b.from), make([]string, 0, b.to-b.from)
		for i := b.from; i < b.to; i++ {
			cos = append(cos, s.companies[i%len(s.companies)])
			names = append(names, "Cliente de mudança "+strconv.Itoa(i+1))
		}
		q = `INSERT INTO customers (id, company_id, name, kind, created_at, updated_at)
SELECT gen_random_uuid(), c, n, 'C', now(), now() FROM unnest($1::uuid[], $2::text[]) AS t(c, n)`
		args = []any{cos, names}
	}
	tag, err := conn.Exec(ctx, q, args...)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", changeNames[b.kind], err)
	}
	return int(tag.RowsAffected()), nil
}

// run commits every batch as fast as the database takes them, on its own
// connection; done and err say how far it got.
func (s *changeSet) run(ctx context.Context, database string, size int) {
	began := time.Now()
	defer func() { s.took = time.Since(began) }()
	conn, err := pgx.Connect(ctx, database)
	if err != nil {
		s.err = fmt.Errorf("changes: database: %w", err)
		return
	}
	defer conn.Close(context.Background())
	for _, b := range changeBatches(s.plan, size) {
		n, err := s.commit(ctx, conn, b)
		if err != nil {
			s.err = fmt.Errorf("changes: %w", err)
			return
		}
		s.done[b.kind] += n
		s.batches++
	}
}

// print says what was committed.
func (s *changeSet) print(b *bencher) {
	fmt.Fprintf(b.out, "changes: %d committed in %s, %d transactions of up to %d rows: %s\n",
		s.done.total(), s.took.Round(time.Millisecond), s.batches, b.o.changesBatch, s.done)
	if s.done != s.plan {
		fmt.Fprintf(b.out, "changes: planned %s (rows changed meanwhile by others are left alone)\n", s.plan)
	}
}
