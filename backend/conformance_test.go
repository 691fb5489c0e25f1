package backend_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/backend"
	g "github.com/invoicing-ao/gateway/backend/gendata"
	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
)

// newDB makes an empty database holding the platform schema and returns its URL.
type newDB func(t testing.TB) string

func postgresDB(withIndexes bool) newDB {
	return func(t testing.TB) string {
		url := testenv.Postgres(t)
		apply := backend.ApplySchemaWithoutIndexes
		if withIndexes {
			apply = backend.ApplySchema
		}
		if err := apply(context.Background(), url); err != nil {
			t.Fatal(err)
		}
		return url
	}
}

func sqliteDB(t testing.TB) string {
	url := "sqlite:" + filepath.Join(t.TempDir(), "platform.db")
	if err := backend.ApplySchema(context.Background(), url); err != nil {
		t.Fatal(err)
	}
	return url
}

func TestConformance(t *testing.T) {
	t.Parallel()
	t.Run("postgres", func(t *testing.T) { t.Parallel(); runConformance(t, postgresDB(false)) })
	t.Run("postgres+indexes", func(t *testing.T) { t.Parallel(); runConformance(t, postgresDB(true)) })
	t.Run("sqlite", func(t *testing.T) { t.Parallel(); runConformance(t, sqliteDB) })
}

func openStore(t *testing.T, url string, now time.Time) *backend.Store {
	t.Helper()
	s, err := backend.Open(context.Background(), backend.Config{URL: url, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

func load(t testing.TB, url string, d *g.Dataset) {
	t.Helper()
	if err := g.Write(context.Background(), url, d); err != nil {
		t.Fatalf("load fixtures: %v", err)
	}
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// runConformance is the one suite both engines must pass. It fills a live and
// a sandbox database with the fixtures, then checks every rule of the adapter.
func runConformance(t *testing.T, mk newDB) {
	liveURL, sandboxURL := mk(t), mk(t)
	load(t, liveURL, liveFixtures())
	load(t, sandboxURL, sandboxFixtures())
	live := openStore(t, liveURL, fixedNow)
	sandbox := openStore(t, sandboxURL, fixedNow)
	ctx := context.Background()

	t.Run("company", func(t *testing.T) { testCompany(t, live) })
	t.Run("company search", func(t *testing.T) { testCompanySearch(t, live) })
	t.Run("get client", func(t *testing.T) { testGetClient(t, live) })
	t.Run("list clients", func(t *testing.T) { testListClients(t, live) })
	t.Run("client search", func(t *testing.T) {
		// Both ways of reading a search's page: from its matches (few of
		// them, the default here) and walked in the list's order (a bound
		// of 1 sends every search with a match that way).
		testClientSearch(t, live)
		walked, err := backend.Open(ctx, backend.Config{URL: liveURL, Now: func() time.Time { return fixedNow }, SearchExactBelow: 1})
		if err != nil {
			t.Fatal(err)
		}
		defer walked.Close()
		testClientSearch(t, walked)
	})
	t.Run("get invoice", func(t *testing.T) { testGetInvoice(t, live) })
	t.Run("transmission", func(t *testing.T) { testTransmission(t, live) })
	t.Run("invoice filters", func(t *testing.T) { testInvoiceFilters(t, live) })
	t.Run("overdue at Luanda midnight", func(t *testing.T) { testOverdueClock(t, liveURL) })
	t.Run("list items equal get", func(t *testing.T) { testListItems(t, live) })
	t.Run("pagination", func(t *testing.T) { testPagination(t, live) })
	t.Run("cursors", func(t *testing.T) { testCursors(t, live) })
	t.Run("changes since", func(t *testing.T) { testChanges(t, live) })
	t.Run("invalid arguments", func(t *testing.T) { testInvalid(t, live) })
	t.Run("changes for events", func(t *testing.T) { testEventChanges(t, live) })
	t.Run("changes of every company", func(t *testing.T) { testAllCompaniesChanges(t, live) })
	t.Run("tenancy", func(t *testing.T) { testTenancy(t, live) })
	t.Run("modes", func(t *testing.T) { testModes(t, live, sandbox) })
	t.Run("create client", func(t *testing.T) { testCreateClient(t, live) })
	t.Run("create races", func(t *testing.T) { testCreateRace(t, live) })
	t.Run("create with an id", func(t *testing.T) { testCreateWithID(t, live) })
	t.Run("cursor walk while inserting", func(t *testing.T) { testCursorWhileInserting(t, liveURL) })
	t.Run("unavailable after close", func(t *testing.T) {
		s := openStore(t, liveURL, fixedNow)
		s.Close()
		if _, err := s.GetClient(ctx, coA, cliCompany); !errors.Is(err, backend.ErrUnavailable) {
			t.Fatalf("GetClient after Close: %v, want ErrUnavailable", err)
		}
	})
	t.Run("cancelled context", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		_, err := live.ListInvoices(cctx, coA, invoicing.InvoiceFilter{Page: 1, PageSize: 20})
		if !errors.Is(err, backend.ErrUnavailable) || !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled: %v, want ErrUnavailable wrapping context.Canceled", err)
		}
	})
}

func testCompany(t *testing.T, s *backend.Store) {
	ctx := context.Background()
	c, err := s.Company(ctx, coA)
	if err != nil || c != (invoicing.Company{ID: coA, Name: "Empresa A Lda", NIF: "5000000001", Status: "active"}) {
		t.Fatalf("Company(A) = %+v, %v", c, err)
	}
	upper := "A0000000-0000-4000-8000-00000000000A"
	if c, err := s.Company(ctx, upper); err != nil || c.ID != coA {
		t.Fatalf("Company(upper-case id) = %+v, %v", c, err)
	}
	if c, err := s.Company(ctx, coSusp); err != nil || c.Status != "suspended" {
		t.Fatalf("Company(suspended) = %+v, %v", c, err)
	}
	for _, id := range []string{"f0000000-0000-4000-8000-000000000000", "not-a-uuid", "", "a0000000-0000-4000-8000-00000000000a'--"} {
		if _, err := s.Company(ctx, id); !errors.Is(err, backend.ErrNotFound) {
			t.Errorf("Company(%q): %v, want ErrNotFound", id, err)
		}
	}
}
