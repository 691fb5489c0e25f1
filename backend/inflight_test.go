package backend_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/invoicing-ao/gateway/backend"
	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
)

const inflightCompany = "a0000000-0000-4000-8000-0000000000f1"

// platformWriter is a session of the platform's own, as its application
// writes: a transaction that updates a customer at its start.
func platformWriter(t *testing.T, url string) pgx.Tx {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(ctx) })
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(ctx) })
	return tx
}

func inflightDB(t *testing.T) string {
	t.Helper()
	url := postgresDB(false)(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, q := range []string{`INSERT INTO companies (id, legal_name, nif) VALUES ($1, 'Empresa', '5000000099')`,
		`INSERT INTO customers (id, company_id, name) VALUES ('c0000000-0000-4000-8000-000000000001', $1, 'Cliente')`} {
		if _, err := conn.Exec(ctx, q, inflightCompany); err != nil {
			t.Fatal(err)
		}
	}
	return url
}

// listed is the open transaction of h whose start is start, if any.
func listed(h invoicing.Horizon, start time.Time) (invoicing.OpenTransaction, bool) {
	i := slices.IndexFunc(h.Open, func(o invoicing.OpenTransaction) bool { return o.Start.Equal(start) })
	if i < 0 {
		return invoicing.OpenTransaction{}, false
	}
	return h.Open[i], true
}

// The reading lists an open transaction with its start (the now() its rows
// get), the clock read before it, and no longer lists it once it has
// committed; the sight says whether the role sees every role's starts.
func TestInFlightListsOpenTransactions(t *testing.T) {
	t.Parallel()
	url := inflightDB(t)
	s := openStore(t, url, time.Now())
	ctx := context.Background()
	tx := platformWriter(t, url)
	var start time.Time
	if err := tx.QueryRow(ctx, `UPDATE customers SET name = 'Mudado', updated_at = now() WHERE id = 'c0000000-0000-4000-8000-000000000001' RETURNING updated_at`).Scan(&start); err != nil {
		t.Fatal(err)
	}
	h, err := s.Changes().InFlight(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var all bool
	if err := tx.QueryRow(ctx, `SELECT pg_has_role(current_user, 'pg_read_all_stats', 'USAGE')`).Scan(&all); err != nil {
		t.Fatal(err)
	}
	if want := map[bool]invoicing.Sight{true: invoicing.SightAll, false: invoicing.SightWriters}[all]; h.Sight != want {
		t.Errorf("sight %v, want %v (pg_read_all_stats: %v)", h.Sight, want, all)
	}
	// The tests' role is the writer's: its own sessions' starts are shown.
	open, ok := listed(h, start.UTC())
	if !ok {
		t.Fatalf("the open transaction (start %v) is not listed: %+v", start, h.Open)
	}
	if h.Now.Before(start) || time.Since(h.Now).Abs() > time.Minute {
		t.Errorf("clock %v: before the transaction's start %v, or far from this process's", h.Now, start)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if h, err = s.Changes().InFlight(ctx); err != nil {
		t.Fatal(err)
	}
	if i := slices.IndexFunc(h.Open, func(o invoicing.OpenTransaction) bool { return o.ID == open.ID }); i >= 0 {
		t.Errorf("still listed after its commit: %+v", h.Open[i])
	}
}

// To a role without pg_monitor, another role's transaction is listed from
// its first write, by its transaction id, without its start; one that has
// not written is not listed. Needs a role the tests may create.
func TestInFlightWithoutPgMonitor(t *testing.T) {
	t.Parallel()
	url := inflightDB(t)
	roleURL, ok, why := testenv.ReadOnlyRole(t, url)
	if !ok {
		t.Skipf("the tests' role may not create roles (%v): the events' tests check the same through their Source", why)
	}
	s, err := backend.Open(context.Background(), backend.Config{URL: roleURL})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	ctx := context.Background()
	reader := platformWriter(t, url) // open, nothing written yet
	if _, err := reader.Exec(ctx, `SELECT count(*) FROM customers`); err != nil {
		t.Fatal(err)
	}
	writer := platformWriter(t, url)
	var xid string
	if err := writer.QueryRow(ctx, `UPDATE customers SET name = 'Mudado', updated_at = now() WHERE id = 'c0000000-0000-4000-8000-000000000001' RETURNING pg_current_xact_id()::text`).Scan(&xid); err != nil {
		t.Fatal(err)
	}
	h, err := s.Changes().InFlight(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if h.Sight != invoicing.SightWriters {
		t.Errorf("sight %v, want SightWriters", h.Sight)
	}
	// pg_current_xact_id is the epoch-qualified id; backend_xid its low 32 bits.
	want := "xid " + xid32(t, xid)
	if len(h.Open) != 1 || h.Open[0].ID != want || !h.Open[0].Start.IsZero() {
		t.Fatalf("listed %+v, want the writer alone, as %q without its start", h.Open, want)
	}
}

func xid32(t *testing.T, full string) string {
	t.Helper()
	n, err := strconv.ParseUint(full, 10, 64)
	if err != nil {
		t.Fatalf("transaction id %q: %v", full, err)
	}
	return strconv.FormatUint(n&0xffffffff, 10)
}

// SQLite has one writer: its reading is its clock alone.
func TestInFlightSQLite(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	s := openStore(t, sqliteDB(t), now)
	h, err := s.Changes().InFlight(context.Background())
	if err != nil || h.Sight != invoicing.SightClock || !h.Now.Equal(now) || len(h.Open) != 0 {
		t.Fatalf("reading %+v, %v; want the clock %v alone", h, err, now)
	}
}

// A client the Store is creating is listed, at the time it records, while
// its insert waits (here behind a lock), and no longer once it is done.
func TestInFlightListsTheStoresOwnCreates(t *testing.T) {
	t.Parallel()
	url := inflightDB(t)
	s := openStore(t, url, time.Now())
	ctx := context.Background()
	lock := testenv.LockTable(t, url, "customers")
	created := make(chan invoicing.Client, 1)
	go func() {
		c, err := s.CreateClient(ctx, inflightCompany, invoicing.NewClient{Name: "Em espera"})
		if err != nil {
			t.Error(err)
		}
		created <- c
	}()
	var listedAt time.Time
	testenv.Eventually(t, "the create listed in flight", func() error {
		h, err := s.Changes().InFlight(ctx)
		if err != nil {
			return err
		}
		for _, o := range h.Open {
			if strings.HasPrefix(o.ID, "own ") {
				listedAt = o.Start
				return nil
			}
		}
		return fmt.Errorf("listed %+v", h.Open)
	})
	if err := lock.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	c := <-created
	h, err := s.Changes().InFlight(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range h.Open {
		if strings.HasPrefix(o.ID, "own ") {
			t.Errorf("still listed after it was made: %+v", o)
		}
	}
	// Listed at the time it records: its row's.
	if !c.UpdatedAt.Equal(listedAt) {
		t.Errorf("listed at %v, recorded at %v", listedAt, c.UpdatedAt)
	}
}
