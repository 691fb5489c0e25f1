package backend_test

import (
	"context"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/backend"
	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
)

// TestKeptTotals runs the count cache against real databases, with every list
// "large" (ExactTotalBelow 3): a kept total lags a write until it is
// TotalMaxAge old and never longer, rows are always live, and each company
// and filter has its own total.
func TestKeptTotals(t *testing.T) {
	t.Parallel()
	for name, mk := range map[string]newDB{"postgres": postgresDB(true), "sqlite": sqliteDB} {
		t.Run(name, func(t *testing.T) {
			url := mk(t)
			load(t, url, liveFixtures())
			clock := testenv.NewClock(fixedNow)
			ctx := context.Background()
			s, err := backend.Open(ctx, backend.Config{URL: url, Now: clock.Now, TotalMaxAge: 10 * time.Second, ExactTotalBelow: 3})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(s.Close)
			exact := openStore(t, url, fixedNow) // default: lists this small are always exact

			clients := func(s *backend.Store, co string) invoicing.Page[invoicing.Client] {
				t.Helper()
				p, err := s.ListClients(ctx, co, invoicing.ClientFilter{Page: 1, PageSize: 100})
				if err != nil {
					t.Fatal(err)
				}
				return p
			}
			before := clients(s, coA).Total
			if other := clients(s, coB).Total; other == before || other != clients(exact, coB).Total {
				t.Fatalf("company B's total %d; company A's is %d", other, before)
			}
			if _, err := s.CreateClient(ctx, coA, invoicing.NewClient{Name: "Cliente Novo"}); err != nil {
				t.Fatal(err)
			}
			clock.Add(4 * time.Second)
			p := clients(s, coA)
			if p.Total != before || len(p.Data) != int(before)+1 {
				t.Fatalf("4s after a create: total %d with %d rows; want the kept %d and live rows", p.Total, len(p.Data), before)
			}
			if got := clients(exact, coA).Total; got != before+1 {
				t.Fatalf("exact total %d, want %d", got, before+1)
			}
			clock.Add(6 * time.Second) // 10s: the kept total may not be served
			if got := clients(s, coA).Total; got != before+1 {
				t.Fatalf("at TotalMaxAge: total %d, want %d", got, before+1)
			}

			for _, f := range []invoicing.InvoiceFilter{{}, {Status: "PAID"}, {Type: "FT"}, {Status: "OVERDUE"}, {From: "2026-03-01"}} {
				f.Page, f.PageSize = 1, 100
				for i := 0; i < 2; i++ { // counted, then kept
					got, err := s.ListInvoices(ctx, coA, f)
					if err != nil {
						t.Fatal(err)
					}
					want, err := exact.ListInvoices(ctx, coA, f)
					if err != nil {
						t.Fatal(err)
					}
					if got.Total != want.Total || len(got.Data) != len(want.Data) {
						t.Errorf("%+v: total %d (%d rows), want %d (%d rows)", f, got.Total, len(got.Data), want.Total, len(want.Data))
					}
				}
			}
		})
	}
}
