package backend_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/invoicing-ao/gateway/backend"
	"github.com/invoicing-ao/gateway/invoicing"
)

// BenchmarkListInvoicesFilters: page 1 with total under each kind of filter;
// after the first request the totals of large lists come from the count
// cache, as in production.
func BenchmarkListInvoicesFilters(b *testing.B) {
	e := setupBench(b)
	for _, f := range []invoicing.InvoiceFilter{
		{}, {Status: "PAID"}, {Status: "OVERDUE"}, {Type: "FT"}, {From: "2025-01-01", To: "2025-06-30"},
		{Status: "ISSUED", Type: "FR"},
	} {
		f.Page, f.PageSize = 1, 20
		b.Run(fmt.Sprintf("%s,%s,%s", f.Status, f.Type, f.From), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := e.s.ListInvoices(context.Background(), e.company, f); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkListInvoicesDeep: pages 1,000 and 10,000 at 100 per page (rows
// 99,901 and 999,901 of the large company; past the end on small data).
func BenchmarkListInvoicesDeep(b *testing.B) {
	e := setupBench(b)
	for _, page := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("page=%d", page), func(b *testing.B) {
			f := invoicing.InvoiceFilter{Page: page, PageSize: 100}
			b.ReportAllocs()
			for b.Loop() {
				p, err := e.s.ListInvoices(context.Background(), e.company, f)
				if err != nil {
					b.Fatal(err)
				}
				if os.Getenv("BACKEND_BENCH_URL") != "" && len(p.Data) != 100 {
					b.Fatalf("page %d: %d rows", page, len(p.Data))
				}
			}
		})
	}
}

// BenchmarkListClientsDeep: page 990 at 100 per page (rows 98,901-99,000 of
// the large company's 100,000 customers).
func BenchmarkListClientsDeep(b *testing.B) {
	e := setupBench(b)
	f := invoicing.ClientFilter{Page: 990, PageSize: 100}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.s.ListClients(context.Background(), e.company, f); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkListInvoicesExactTotal is the reference of the count cache: the
// same pages with an exact count on every request (TotalMaxAge < 0).
func BenchmarkListInvoicesExactTotal(b *testing.B) {
	e := setupBench(b)
	s, err := backend.Open(context.Background(), backend.Config{URL: e.url, TotalMaxAge: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	for _, f := range []invoicing.InvoiceFilter{{}, {Status: "PAID"}, {Type: "FT"}} {
		f.Page, f.PageSize = 1, 20
		b.Run(fmt.Sprintf("%s,%s", f.Status, f.Type), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.ListInvoices(context.Background(), e.company, f); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
