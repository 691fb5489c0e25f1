package events

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/backend"
	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
)

// heldSource is the platform's database with one transaction kept open as
// long as the test likes: its row (a client of the given change time) is
// committed, but hidden from the reads and its start listed in flight
// until release, as PostgreSQL would show a transaction open that long.
type heldSource struct {
	Source
	mu    sync.Mutex
	start time.Time
	open  bool
}

func (h *heldSource) held() (time.Time, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.start, h.open
}

func (h *heldSource) release() {
	h.mu.Lock()
	h.open = false
	h.mu.Unlock()
}

func (h *heldSource) InFlight(ctx context.Context) (invoicing.Horizon, error) {
	r, err := h.Source.InFlight(ctx)
	if start, open := h.held(); open {
		r.Open = append(r.Open, invoicing.OpenTransaction{ID: "held", Start: start})
	}
	return r, err
}

func (h *heldSource) ChangedClients(ctx context.Context, q invoicing.ChangeQuery) ([]invoicing.Changed[invoicing.Client], error) {
	rows, err := h.Source.ChangedClients(ctx, q)
	start, open := h.held()
	out := rows[:0]
	for _, r := range rows {
		if !open || !r.At.Equal(start) {
			out = append(out, r)
		}
	}
	return out, err
}

// A transaction open ten minutes (its row dated then, held by the Source)
// is delivered once it ends, the sweep out of the way; the changes
// meanwhile are not held behind it.
func TestTransactionOpenTenMinutes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var start time.Time
	if err := e.db.QueryRow(context.Background(), `INSERT INTO customers (id, company_id, name, created_at, updated_at)
VALUES ($1, $2, 'Dez minutos', now() - interval '10 minutes', now() - interval '10 minutes') RETURNING updated_at`, cliLate, e.company).Scan(&start); err != nil {
		t.Fatal(err)
	}
	src := &heldSource{Source: e.store.Changes(), start: start.UTC(), open: true}
	cfg := e.lateConfig()
	cfg.Sources = map[invoicing.Mode]Source{invoicing.Test: src}
	// The endpoint predates the change: nothing older than it is sent to it.
	cfg.Now = func() time.Time { return time.Now().Add(-time.Hour) }
	e.endpoint(e.service(cfg))
	cfg.Now = nil
	s := e.service(cfg)
	e.run(s)
	e.flowWhile(time.Now().Add(time.Second), 0)
	e.waitHeld(s, start.UTC())
	if n := countOf(e.recv.deliveries(), ClientCreated, cliLate); n != 0 {
		t.Fatalf("delivered while its transaction was open (%d)", n)
	}
	src.release()
	e.recv.waitFor(key{ClientCreated, cliLate})
	e.insertClient(cli1, "Depois")
	onceEach(t, e.recv.waitFor(key{ClientCreated, cli1}))
}

// writersSource is the database as a role without pg_monitor sees it:
// transactions by their ids, no start. (Every open transaction is listed,
// as if each had written.)
type writersSource struct{ Source }

func (w writersSource) InFlight(ctx context.Context) (invoicing.Horizon, error) {
	h, err := w.Source.InFlight(ctx)
	h.Sight = invoicing.SightWriters
	for i := range h.Open {
		h.Open[i] = invoicing.OpenTransaction{ID: "xid of " + h.Open[i].ID}
	}
	return h, err
}

// Without pg_monitor, a transaction that writes at its start and commits
// later than Settle after it is delivered once, after its commit, the sweep
// out of the way: detection follows it from its first write. Through a role
// of the test's own without pg_monitor where the tests may create one, and
// through the Source in any case.
func TestWithoutPgMonitor(t *testing.T) {
	t.Parallel()
	t.Run("source", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		testWriterAtStart(t, e, writersSource{e.store.Changes()})
	})
	t.Run("role", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		testWriterAtStart(t, e, e.readOnlyStore().Changes())
	})
}

// readOnlyStore is the platform's database read by a role without
// pg_monitor, or the test skipped when the tests' role may not create one
// (the Source's subtest checks the same).
func (e *env) readOnlyStore() *backend.Store {
	e.t.Helper()
	url, ok, why := testenv.ReadOnlyRole(e.t, e.url)
	if !ok {
		e.t.Skipf("the tests' role may not create roles (%v): checked through the Source instead", why)
	}
	st, err := backend.Open(context.Background(), backend.Config{URL: url})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(st.Close)
	return st
}

func testWriterAtStart(t *testing.T, e *env, src Source) {
	cfg := e.lateConfig()
	cfg.Sources = map[invoicing.Mode]Source{invoicing.Test: src}
	var logged testenv.SyncBuffer
	cfg.Logger = slog.New(slog.NewTextHandler(&logged, nil))
	s := e.service(cfg)
	e.endpoint(s)
	e.run(s)
	e.insertClient(cliLate, "Cliente")
	e.recv.waitFor(key{ClientCreated, cliLate})
	if !strings.Contains(logged.String(), "lacks pg_monitor") {
		t.Errorf("nothing said at start of what detection cannot do; logged:\n%s", logged.String())
	}
	tx := e.begin()
	start := changeClient(t, tx, cliLate, "Mudado")
	e.flowWhile(time.Now().Add(2*time.Second), 0)
	testenv.Eventually(t, "the watermark held at or before the writer's start", func() error {
		if p, ok := decodeMark(e.rdb.Get(context.Background(), s.l.watermark(invoicing.Test, "clients")).Val()); !ok || p.At.After(start) {
			return testenv.Want(p.At.String(), "at or before "+start.String(), "watermark")
		}
		return nil
	})
	if err := tx.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.recv.waitFor(key{ClientUpdated, cliLate})
	e.insertClient(cli1, "Depois")
	onceEach(t, e.recv.waitFor(key{ClientCreated, cli1}))
}

// Without pg_monitor, a transaction that first writes later than Settle
// after its start is the sweep's to find: detection did not see it begin.
// It is delivered once, and the log says the sweep found it.
func TestWithoutPgMonitorLateWriterFoundBySweep(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cfg := e.config() // a sweep every 2 s
	cfg.Sources = map[invoicing.Mode]Source{invoicing.Test: e.readOnlyStore().Changes()}
	var logged testenv.SyncBuffer
	cfg.Logger = slog.New(slog.NewTextHandler(&logged, nil))
	s := e.service(cfg)
	e.endpoint(s)
	e.run(s)
	e.insertClient(cliLate, "Cliente")
	e.recv.waitFor(key{ClientCreated, cliLate})
	tx := e.begin()
	if _, err := tx.Exec(context.Background(), `SELECT 1`); err != nil { // begun: its now() is taken
		t.Fatal(err)
	}
	e.flowWhile(time.Now().Add(time.Second), 0) // longer than Settle before its first write
	changeClient(t, tx, cliLate, "Tarde")
	e.flowWhile(time.Now().Add(time.Second), 100)
	if err := tx.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.recv.waitFor(key{ClientUpdated, cliLate})
	testenv.Eventually(t, "the sweep's word", func() error {
		if !strings.Contains(logged.String(), "the sweep found changes committed late") {
			return testenv.Want("", "the sweep found changes committed late", "log")
		}
		return nil
	})
	e.insertClient(cli1, "Depois")
	onceEach(t, e.recv.waitFor(key{ClientCreated, cli1}))
}
