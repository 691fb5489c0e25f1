package backend_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/backend"
	g "github.com/invoicing-ao/gateway/backend/gendata"
	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
)

// TestReadReplica checks the routing of a Store with a read replica. The
// "replica" is a second database loaded with the same data that never
// receives the primary's writes: a replica with infinite lag, so every read
// shows where it went.
func TestReadReplica(t *testing.T) {
	t.Parallel()
	t.Run("postgres", func(t *testing.T) { t.Parallel(); testReadReplica(t, postgresDB(true)) })
	t.Run("sqlite", func(t *testing.T) { t.Parallel(); testReadReplica(t, sqliteDB) })
}

func testReadReplica(t *testing.T, mk newDB) {
	ctx := context.Background()
	primaryURL, replicaURL := mk(t), mk(t)
	load(t, primaryURL, liveFixtures())
	load(t, replicaURL, liveFixtures())
	clock := testenv.NewClock(fixedNow)
	const window = 5 * time.Second
	s := openReplicated(t, backend.Config{URL: primaryURL, ReplicaURL: replicaURL, ReadYourWritesWindow: window}, clock.Now)
	other := openReplicated(t, backend.Config{URL: primaryURL, ReplicaURL: replicaURL}, clock.Now) // another gateway instance
	onPrimary := openReplicated(t, backend.Config{URL: primaryURL}, clock.Now)
	onReplica := openReplicated(t, backend.Config{URL: replicaURL}, clock.Now)

	// Rows only the replica has: reads that find them went to the replica.
	inReplicaA := createNamedClient(t, onReplica, coA, "Replica Only A")
	createNamedClient(t, onReplica, coB, "Replica Only B")
	if n := countClients(t, s, coA, "Replica Only A"); n != 1 {
		t.Fatalf("list before any write: %d replica-only clients, want 1 (reads must go to the replica)", n)
	}
	if c, err := s.GetClient(ctx, coA, inReplicaA.ID); err != nil || c.ID != inReplicaA.ID {
		t.Fatalf("get of a replica-only client = %v, %v", c.ID, err)
	}

	// A create goes to the primary only.
	fresh := createNamedClient(t, s, coA, "Fresh Client")
	if _, err := onPrimary.GetClient(ctx, coA, fresh.ID); err != nil {
		t.Fatalf("created client not in the primary: %v", err)
	}
	if _, err := onReplica.GetClient(ctx, coA, fresh.ID); !errors.Is(err, backend.ErrNotFound) {
		t.Fatalf("created client in the replica (%v): the test replica must never receive writes", err)
	}

	checkReadYourWrites(t, s, other, fresh)
	// Once the window closes, lists go back to the replica.
	clock.Add(window)
	checkAfterReadYourWrites(t, s, onPrimary, fresh)
}

// openReplicated opens a Store with cfg on the time now tells, closed when
// the test ends.
func openReplicated(t *testing.T, cfg backend.Config, now func() time.Time) *backend.Store {
	t.Helper()
	cfg.Now = now
	s, err := backend.Open(context.Background(), cfg)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

// countClients is the total of company's clients whose name matches search.
func countClients(t *testing.T, st *backend.Store, company, search string) int64 {
	t.Helper()
	p, err := st.ListClients(context.Background(), company, invoicing.ClientFilter{Search: search, Page: 1, PageSize: 10})
	if err != nil {
		t.Fatalf("list %s: %v", search, err)
	}
	return p.Total
}

// createNamedClient creates a client of company with only a name.
func createNamedClient(t *testing.T, st *backend.Store, company, name string) invoicing.Client {
	t.Helper()
	c, err := st.CreateClient(context.Background(), company, invoicing.NewClient{Name: name})
	if err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
	return c
}

// checkReadYourWrites checks, right after s created fresh, that s reads
// it back at once and that another instance (other) finds it by id.
func checkReadYourWrites(t *testing.T, s, other *backend.Store, fresh invoicing.Client) {
	t.Helper()
	ctx := context.Background()
	// Read-your-writes: get and list see it at once...
	if c, err := s.GetClient(ctx, coA, fresh.ID); err != nil || c != fresh {
		t.Fatalf("get right after create = %+v, %v; want %+v", c, err, fresh)
	}
	if n := countClients(t, s, coA, "Fresh Client"); n != 1 {
		t.Fatalf("list right after create: %d, want 1", n)
	}
	// ...because the company's lists now come from the primary,
	if n := countClients(t, s, coA, "Replica Only A"); n != 0 {
		t.Fatalf("list after create still read the replica (%d replica-only rows)", n)
	}
	// while other companies still read the replica.
	if n := countClients(t, s, coB, "Replica Only B"); n != 1 {
		t.Fatalf("another company's list left the replica: %d", n)
	}

	// Another instance finds the new client by id at once (the replica has
	// none, so it asks the primary); its lists may lag by the replication
	// delay, here forever: the documented edge.
	if c, err := other.GetClient(ctx, coA, fresh.ID); err != nil || c.ID != fresh.ID {
		t.Fatalf("get on another instance = %v, %v", c.ID, err)
	}
	if n := countClients(t, other, coA, "Fresh Client"); n != 0 {
		t.Fatalf("another instance's list read the primary (%d): lists should go to the replica", n)
	}
}

// checkAfterReadYourWrites checks s once its read-your-writes window has
// closed: lists read the replica again, a get still finds the client
// through the primary, and invoices answer as without a replica.
func checkAfterReadYourWrites(t *testing.T, s, onPrimary *backend.Store, fresh invoicing.Client) {
	t.Helper()
	ctx := context.Background()
	if n := countClients(t, s, coA, "Replica Only A"); n != 1 {
		t.Fatalf("list after the window: %d replica-only rows, want 1", n)
	}
	if c, err := s.GetClient(ctx, coA, fresh.ID); err != nil || c.ID != fresh.ID {
		t.Fatalf("get after the window = %v, %v", c.ID, err)
	}
	// An id nowhere is still not found.
	if _, err := s.GetClient(ctx, coA, "99999999-0000-4000-8000-000000000000"); !errors.Is(err, backend.ErrNotFound) {
		t.Fatalf("unknown id: %v", err)
	}
	// Invoices are read from the replica and answer as without one.
	a, errA := s.ListInvoices(ctx, coA, invoicing.InvoiceFilter{Page: 1, PageSize: 5})
	b, errB := onPrimary.ListInvoices(ctx, coA, invoicing.InvoiceFilter{Page: 1, PageSize: 5})
	if errA != nil || errB != nil || jsonOf(t, a) != jsonOf(t, b) {
		t.Fatalf("invoices through the replica differ: %v %v", errA, errB)
	}
	if err := s.Ping(ctx); err != nil {
		t.Fatalf("ping: %v", err)
	}
}

func TestReplicaOfAnotherEngineRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, err := backend.Open(context.Background(), backend.Config{
		URL:        "sqlite:" + filepath.Join(dir, "a.db"),
		ReplicaURL: "postgres://nobody@127.0.0.1:1/x",
	})
	if err == nil {
		t.Fatal("a PostgreSQL replica of a SQLite database was accepted")
	}
}

// TestReplicaReadsByFreshness checks the rules of where reads go that the
// test above does not show: each call reads one copy (a list's total and its
// page agree), invoices and companies read the replica even while the
// company's client lists read the primary, and the read of a create's own
// earlier attempt (same id) sees the primary. The replica differs from the
// primary in the names it holds and never receives writes.
func TestReplicaReadsByFreshness(t *testing.T) {
	t.Parallel()
	t.Run("postgres", func(t *testing.T) { t.Parallel(); testReplicaReadsByFreshness(t, postgresDB(true)) })
	t.Run("sqlite", func(t *testing.T) { t.Parallel(); testReplicaReadsByFreshness(t, sqliteDB) })
}

func testReplicaReadsByFreshness(t *testing.T, mk newDB) {
	ctx := context.Background()
	primaryURL, replicaURL := mk(t), mk(t)
	load(t, primaryURL, liveFixtures())
	load(t, replicaURL, replicaRenamed())
	now := func() time.Time { return fixedNow }
	s := openReplicated(t, backend.Config{URL: primaryURL, ReplicaURL: replicaURL}, now)
	other := openReplicated(t, backend.Config{URL: primaryURL, ReplicaURL: replicaURL}, now) // another instance
	onReplica := openReplicated(t, backend.Config{URL: replicaURL}, now)

	if _, err := onReplica.CreateClient(ctx, coA, invoicing.NewClient{Name: "Replica Only"}); err != nil {
		t.Fatal(err)
	}
	if p := listOneCopy(t, s, "Replica Only"); len(p.Data) != 1 {
		t.Fatalf("list before any write: %d replica-only clients, want 1", len(p.Data))
	}

	// A create with its own id, then its retry: the retry is told the
	// client exists, on this instance and on another, although the replica
	// has no such row.
	const id = "15000000-0000-4000-8000-000000000001"
	created, err := s.CreateClient(ctx, coA, invoicing.NewClient{ID: id, Name: "Fresh Client"})
	if err != nil {
		t.Fatal(err)
	}
	for name, st := range map[string]*backend.Store{"this instance": s, "another instance": other} {
		_, err := st.CreateClient(ctx, coA, invoicing.NewClient{ID: id, Name: "Fresh Client"})
		var exists *backend.ClientExistsError
		if !errors.As(err, &exists) || exists.Client != created {
			t.Fatalf("retry of the create on %s: %v, want the client as created", name, err)
		}
	}

	// Within the company's window its client lists read the primary, count
	// and page alike...
	if p := listOneCopy(t, s, "Fresh Client"); len(p.Data) != 1 || p.Data[0] != created {
		t.Fatalf("list right after create: %+v", p.Data)
	}
	if p := listOneCopy(t, s, "Replica Only"); len(p.Data) != 0 {
		t.Fatalf("list after create read the replica: %+v", p.Data)
	}
	// ...while its invoices and the company itself still read the replica.
	checkInvoicesReadReplica(t, s)
	// The events' detector reads the primary: a replica behind would let it
	// pass a change.
	changed, err := s.Changes().ChangedInvoices(ctx, invoicing.ChangeQuery{Companies: []string{coA},
		From: ts("2025-01-01T00:00:00Z"), To: ts("2027-01-01T00:00:00Z"), Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range changed {
		if c.Resource.ID == docFT && c.Resource.Customer.Name == replicaName {
			t.Fatal("the events' reads went to the replica")
		}
	}
	if len(changed) == 0 {
		t.Fatal("no changed invoices")
	}
}

// replicaName is the name the replica's copy gives company A and docFT's
// customer, so that a read shows which copy it went to.
const replicaName = "Nome Na Réplica"

// replicaRenamed is the live fixtures with company A and docFT's customer
// named replicaName.
func replicaRenamed() *g.Dataset {
	copyOf := liveFixtures()
	for i := range copyOf.Companies {
		if copyOf.Companies[i].ID == coA {
			copyOf.Companies[i].LegalName = replicaName
		}
	}
	for i := range copyOf.Documents {
		if copyOf.Documents[i].ID == docFT {
			copyOf.Documents[i].CustomerName = replicaName
		}
	}
	return copyOf
}

// listOneCopy lists company A's clients matching search on s, and checks
// the count and the page read the same copy.
func listOneCopy(t *testing.T, s *backend.Store, search string) invoicing.Page[invoicing.Client] {
	t.Helper()
	p, err := s.ListClients(context.Background(), coA, invoicing.ClientFilter{Search: search, Page: 1, PageSize: 10})
	if err != nil {
		t.Fatalf("list %s: %v", search, err)
	}
	if p.Total != int64(len(p.Data)) {
		t.Fatalf("list %q: total %d, %d rows: the count and the page read different copies", search, p.Total, len(p.Data))
	}
	return p
}

// checkInvoicesReadReplica checks that s reads company A's invoices and the
// company itself from the replica (replicaRenamed) after a create.
func checkInvoicesReadReplica(t *testing.T, s *backend.Store) {
	t.Helper()
	ctx := context.Background()
	inv, err := s.GetInvoice(ctx, coA, docFT)
	if err != nil || inv.Customer.Name != replicaName {
		t.Fatalf("get invoice after a create: %q, %v; want the replica's %q", inv.Customer.Name, err, replicaName)
	}
	page, err := s.ListInvoices(ctx, coA, invoicing.InvoiceFilter{Page: 1, PageSize: 100})
	if err != nil {
		t.Fatal(err)
	}
	seen := false
	for _, i := range page.Data {
		if i.ID == docFT {
			seen = i.Customer.Name == replicaName
		}
	}
	if !seen {
		t.Fatalf("list invoices after a create did not read the replica")
	}
	if c, err := s.Company(ctx, coA); err != nil || c.Name != replicaName {
		t.Fatalf("company after a create: %q, %v; want the replica's %q", c.Name, err, replicaName)
	}
}
