// Conformance: what every list and read holds to, pages, invalid input,
// a company's data kept from another's and live data kept from test data.
// runConformance (conformance_test.go) runs these on each database.

package backend_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/invoicing-ao/gateway/backend"
	g "github.com/invoicing-ao/gateway/backend/gendata"
	"github.com/invoicing-ao/gateway/invoicing"
)

func testPagination(t *testing.T, s *backend.Store) {
	ctx := context.Background()
	wantDocs, wantClients := expectedDocOrder(), expectedClientOrder()
	for _, size := range []int{1, 7, 100} {
		var got []string
		for page := 1; ; page++ {
			p, err := s.ListInvoices(ctx, coP, invoicing.InvoiceFilter{Page: page, PageSize: size})
			if err != nil {
				t.Fatal(err)
			}
			if p.Total != pagDocs || p.Page != page || p.PageSize != size {
				t.Fatalf("size %d page %d: envelope %d/%d/%d", size, page, p.Total, p.Page, p.PageSize)
			}
			if len(p.Data) == 0 {
				break
			}
			if len(p.Data) > size {
				t.Fatalf("page of %d rows for size %d", len(p.Data), size)
			}
			got = append(got, invoiceIDs(p)...)
		}
		if !slices.Equal(got, wantDocs) {
			t.Fatalf("walking invoices by %d: %d ids, order differs from the expected %d", size, len(got), len(wantDocs))
		}
		got = nil
		for page := 1; ; page++ {
			p, err := s.ListClients(ctx, coP, invoicing.ClientFilter{Page: page, PageSize: size})
			if err != nil {
				t.Fatal(err)
			}
			if p.Total != pagClients {
				t.Fatalf("clients total %d", p.Total)
			}
			if len(p.Data) == 0 {
				break
			}
			got = append(got, clientIDs(p)...)
		}
		if !slices.Equal(got, wantClients) {
			t.Fatalf("walking clients by %d: got %v\nwant %v", size, got, wantClients)
		}
	}
	edges := []struct {
		page, size, n int
	}{{3, 100, 5}, {4, 100, 0}, {1 << 40, 100, 0}, {205, 1, 1}, {206, 1, 0}}
	for _, e := range edges {
		p, err := s.ListInvoices(ctx, coP, invoicing.InvoiceFilter{Page: e.page, PageSize: e.size})
		if err != nil || len(p.Data) != e.n || p.Total != pagDocs || p.Data == nil {
			t.Errorf("page %d size %d: %d rows total %d, %v; want %d rows total %d", e.page, e.size, len(p.Data), p.Total, err, e.n, pagDocs)
		}
	}
	if got := jsonOf(t, invoicing.Page[invoicing.Invoice]{Data: []invoicing.Invoice{}, Total: 205, Page: 4, PageSize: 100}); got != `{"data":[],"total":205,"page":4,"pageSize":100}` {
		t.Fatalf("empty page JSON: %s", got)
	}
}

func testInvalid(t *testing.T, s *backend.Store) {
	ctx := context.Background()
	bad := []invoicing.InvoiceFilter{
		{Page: 0, PageSize: 20}, {Page: 1, PageSize: 0}, {Page: 1, PageSize: 101}, {Page: -1, PageSize: 20},
		{Status: "overdue", Page: 1, PageSize: 20}, {Status: "LATE", Page: 1, PageSize: 20},
		{Type: "XX", Page: 1, PageSize: 20}, {Type: "ft", Page: 1, PageSize: 20},
		{From: "2026-13-01", Page: 1, PageSize: 20}, {To: "2026-3-1", Page: 1, PageSize: 20},
		{From: "2026-02-30", Page: 1, PageSize: 20}, {To: "yesterday", Page: 1, PageSize: 20},
	}
	for _, f := range bad {
		if _, err := s.ListInvoices(ctx, coA, f); !errors.Is(err, backend.ErrInvalid) {
			t.Errorf("ListInvoices(%+v): %v, want ErrInvalid", f, err)
		}
	}
	for _, f := range []invoicing.ClientFilter{{Page: 0, PageSize: 1}, {Page: 1, PageSize: 101}} {
		if _, err := s.ListClients(ctx, coA, f); !errors.Is(err, backend.ErrInvalid) {
			t.Errorf("ListClients(%+v): %v, want ErrInvalid", f, err)
		}
	}
}

func testTenancy(t *testing.T, s *backend.Store) {
	ctx := context.Background()
	if _, err := s.GetInvoice(ctx, coA, docB); !errors.Is(err, backend.ErrNotFound) {
		t.Errorf("A reads B's invoice: %v", err)
	}
	if _, err := s.GetInvoice(ctx, coB, docFT); !errors.Is(err, backend.ErrNotFound) {
		t.Errorf("B reads A's invoice: %v", err)
	}
	if _, err := s.GetInvoice(ctx, coA, "nope"); !errors.Is(err, backend.ErrNotFound) {
		t.Errorf("non-UUID invoice id: %v", err)
	}
	if _, err := s.GetClient(ctx, coB, cliCompany); !errors.Is(err, backend.ErrNotFound) {
		t.Errorf("B reads A's client: %v", err)
	}
	inv, err := s.GetInvoice(ctx, coB, docB)
	if err != nil || inv.Customer.ID == nil || *inv.Customer.ID != cliB {
		t.Fatalf("B's own invoice: %+v, %v", inv, err)
	}
	p, err := s.ListInvoices(ctx, coB, invoicing.InvoiceFilter{Page: 1, PageSize: 100})
	if err != nil || !slices.Equal(invoiceIDs(p), []string{docB}) {
		t.Errorf("B's invoices: %v, %v", invoiceIDs(p), err)
	}
	c, err := s.ListClients(ctx, coB, invoicing.ClientFilter{Search: "5417001234", Page: 1, PageSize: 100})
	if err != nil || !slices.Equal(clientIDs(c), []string{cliB}) {
		t.Errorf("B's clients: %v, %v", clientIDs(c), err)
	}
	for _, co := range []string{"f0000000-0000-4000-8000-000000000000", "not-a-uuid"} {
		p, err := s.ListInvoices(ctx, co, invoicing.InvoiceFilter{Page: 1, PageSize: 20})
		if err != nil || p.Total != 0 || p.Data == nil {
			t.Errorf("unknown company %q: %+v, %v", co, p, err)
		}
	}
}

func testModes(t *testing.T, live, sandbox *backend.Store) {
	ctx := context.Background()
	if _, err := sandbox.GetClient(ctx, coA, cliCompany); !errors.Is(err, backend.ErrNotFound) {
		t.Errorf("sandbox sees a live client: %v", err)
	}
	if _, err := live.GetClient(ctx, coA, cliSandbox); !errors.Is(err, backend.ErrNotFound) {
		t.Errorf("live sees a sandbox client: %v", err)
	}
	if c, err := sandbox.GetClient(ctx, coA, cliSandbox); err != nil || c.Name != "Cliente de Teste" {
		t.Errorf("sandbox client: %+v, %v", c, err)
	}
	p, err := sandbox.ListInvoices(ctx, coA, invoicing.InvoiceFilter{Page: 1, PageSize: 100})
	if err != nil || !slices.Equal(invoiceIDs(p), []string{docSandbox}) {
		t.Errorf("sandbox invoices: %v, %v", invoiceIDs(p), err)
	}
	created, err := sandbox.CreateClient(ctx, coW, invoicing.NewClient{Name: "Só no sandbox", NIF: g.Ptr("5777000000")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := live.GetClient(ctx, coW, created.ID); !errors.Is(err, backend.ErrNotFound) {
		t.Errorf("a sandbox create is visible live: %v", err)
	}
	if _, err := live.CreateClient(ctx, coW, invoicing.NewClient{Name: "Live", NIF: g.Ptr("5777000000")}); err != nil {
		t.Errorf("the sandbox's NIF blocks a live create: %v", err)
	}
}
