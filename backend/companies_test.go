package backend_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/invoicing-ao/gateway/backend"
	"github.com/invoicing-ao/gateway/invoicing"
)

// testCompanySearch: the platform team finds companies by name or NIF, page
// by page, and reads the names of the ids it has.
func testCompanySearch(t *testing.T, s *backend.Store) {
	ctx := context.Background()
	names := func(cs []invoicing.Company) []string {
		out := make([]string, len(cs))
		for i, c := range cs {
			out[i] = c.Name
		}
		return out
	}
	search := func(q invoicing.CompanyQuery) []invoicing.Company {
		t.Helper()
		cs, err := s.SearchCompanies(ctx, q)
		if err != nil {
			t.Fatalf("%+v: %v", q, err)
		}
		return cs
	}
	all := []string{"Empresa A Lda", "Empresa B Lda", "Empresa P Lda", "Empresa Suspensa", "Empresa W Lda"}
	for _, c := range []struct {
		search string
		want   []string
	}{
		{"", all},
		{"empresa", all},
		{"EMPRESA a", all[:1]},
		{"suspensa", all[3:4]},
		{"5000 000 003", all[2:3]}, // a NIF as typed, spaces ignored
		{"50000000", all},
		{"%", nil}, // LIKE's wildcards are text
		{"_", nil},
		{"nothing like it", nil},
	} {
		if got := names(search(invoicing.CompanyQuery{Search: c.search, Limit: 10})); !slices.Equal(got, c.want) {
			t.Errorf("search %q: %q, want %q", c.search, got, c.want)
		}
	}
	got := search(invoicing.CompanyQuery{Search: "suspensa", Limit: 10})
	if len(got) != 1 || got[0] != (invoicing.Company{ID: coSusp, Name: "Empresa Suspensa", NIF: "5000000005", Status: "suspended"}) {
		t.Errorf("suspended company: %+v", got)
	}

	// Pages of two: each company once, in order.
	var paged []string
	var after *invoicing.CompanyPosition
	for range 10 {
		page := search(invoicing.CompanyQuery{Search: "lda", After: after, Limit: 2})
		if len(page) == 0 {
			break
		}
		paged = append(paged, names(page)...)
		last := page[len(page)-1]
		after = &invoicing.CompanyPosition{Name: last.Name, ID: last.ID}
	}
	if want := []string{"Empresa A Lda", "Empresa B Lda", "Empresa P Lda", "Empresa W Lda"}; !slices.Equal(paged, want) {
		t.Errorf("pages: %q, want %q", paged, want)
	}

	// By id: the known ones, whatever the case or order; others left out.
	byID := search(invoicing.CompanyQuery{IDs: []string{coB, "A0000000-0000-4000-8000-00000000000A", "not-an-id", "f0000000-0000-4000-8000-000000000000"}, Limit: 10})
	if got := names(byID); !slices.Equal(got, all[:2]) || byID[0].ID != coA {
		t.Errorf("by id: %+v", byID)
	}
	if got := search(invoicing.CompanyQuery{IDs: []string{"not-an-id"}, Limit: 10}); len(got) != 0 {
		t.Errorf("malformed ids only: %+v", got)
	}

	for _, q := range []invoicing.CompanyQuery{{Limit: 0}, {Limit: backend.MaxCompanyLimit + 1}, {IDs: make([]string, backend.MaxCompanyIDs+1), Limit: 1}} {
		if _, err := s.SearchCompanies(ctx, q); !errors.Is(err, backend.ErrInvalid) {
			t.Errorf("%d ids, limit %d: %v, want ErrInvalid", len(q.IDs), q.Limit, err)
		}
	}
}
