package backend_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/backend"
	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
)

// Deep pages from bookmarks (bookmarks.go), on every engine: pages by number
// are the same as without bookmarks; after a write ahead of a deep page, a page
// from a bookmark starts where it did, for at most TotalMaxAge, while pages
// before BookmarkFrom are exact at once.
func TestDeepPagesFromBookmarks(t *testing.T) {
	t.Parallel()
	t.Run("postgres", func(t *testing.T) { t.Parallel(); testBookmarks(t, postgresDB(false)) })
	t.Run("postgres+indexes", func(t *testing.T) { t.Parallel(); testBookmarks(t, postgresDB(true)) })
	t.Run("sqlite", func(t *testing.T) { t.Parallel(); testBookmarks(t, sqliteDB) })
}

func testBookmarks(t *testing.T, mk newDB) {
	ctx := context.Background()
	url := mk(t)
	load(t, url, liveFixtures())
	clk := testenv.NewClock(fixedNow)
	open := func(cfg backend.Config) *backend.Store {
		cfg.URL, cfg.Now = url, clk.Now
		s, err := backend.Open(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		return s
	}
	// Lists of 10 or more matches keep their total, and their pages from the
	// second (or fourth) row on may start from a bookmark: from the second,
	// bookmarks fall among the pagination company's five drafts too.
	exact := open(backend.Config{TotalMaxAge: -1})
	marked := open(backend.Config{ExactTotalBelow: 10, BookmarkFrom: 1})

	invoices := func(s *backend.Store, f invoicing.InvoiceFilter) []string {
		p, err := s.ListInvoices(ctx, coP, f)
		if err != nil {
			t.Fatal(err)
		}
		return invoiceIDs(p)
	}
	clients := func(s *backend.Store, page, size int) []string {
		p, err := s.ListClients(ctx, coP, invoicing.ClientFilter{Page: page, PageSize: size})
		if err != nil {
			t.Fatal(err)
		}
		return clientIDs(p)
	}
	for _, size := range []int{1, 2, 3, 7} {
		for pass := range 2 { // the second pass starts from the first's bookmarks
			for page := 1; (page-1)*size < pagDocs; page++ {
				for _, status := range []string{"", "PAID"} {
					f := invoicing.InvoiceFilter{Page: page, PageSize: size, Status: status}
					if got, want := invoices(marked, f), invoices(exact, f); !slices.Equal(got, want) {
						t.Fatalf("invoices %+v, pass %d: %v, want %v", f, pass, got, want)
					}
				}
				if got, want := clients(marked, page, size), clients(exact, page, size); !slices.Equal(got, want) {
					t.Fatalf("clients page %d size %d, pass %d: %v, want %v", page, size, pass, got, want)
				}
			}
		}
	}

	// A client created ahead of page 3 (rows 6 to 8): the page from its
	// bookmark still starts after the row that was before it.
	marked = open(backend.Config{ExactTotalBelow: 10, BookmarkFrom: 4})
	_ = clients(marked, 3, 3) // makes the bookmark
	before := clients(marked, 3, 3)
	if _, err := exact.CreateClient(ctx, coP, invoicing.NewClient{Name: "Cliente novo"}); err != nil {
		t.Fatal(err)
	}
	fresh := clients(exact, 3, 3)
	if slices.Equal(fresh, before) || !slices.Equal(fresh[1:], before[:2]) {
		t.Fatalf("page 3 after a create: %v, before it %v: want shifted by one", fresh, before)
	}
	if got := clients(marked, 3, 3); !slices.Equal(got, before) {
		t.Errorf("page 3 from its bookmark right after the create: %v, want where it started (%v)", got, before)
	}
	if got, want := clients(marked, 1, 3), clients(exact, 1, 3); !slices.Equal(got, want) {
		t.Errorf("page 1 (before BookmarkFrom) after the create: %v, want exact %v", got, want)
	}
	clk.Add(10 * time.Second) // TotalMaxAge: the bookmark is too old
	if got := clients(marked, 3, 3); !slices.Equal(got, fresh) {
		t.Errorf("page 3 a TotalMaxAge later: %v, want exact %v", got, fresh)
	}
}
