package backend_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/backend"
	"github.com/invoicing-ao/gateway/backend/gendata"
	"github.com/invoicing-ao/gateway/invoicing"
	"github.com/jackc/pgx/v5/pgxpool"
)

type benchEnv struct {
	s                             *backend.Store
	url, company, client, invoice string
}

// setupBench opens the database benchmarks read: BACKEND_BENCH_URL (for
// example one filled by gendata.LoadLarge, whose big company is then used),
// or a fresh one with the conformance fixtures and the proposed indexes.
func setupBench(b *testing.B) benchEnv {
	ctx := context.Background()
	e := benchEnv{url: os.Getenv("BACKEND_BENCH_URL"), company: coA, client: cliCompany, invoice: docFT}
	if e.url == "" {
		e.url = postgresDB(true)(b)
		load(b, e.url, liveFixtures())
	}
	s, err := backend.Open(ctx, backend.Config{URL: e.url, Now: func() time.Time { return fixedNow }})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(s.Close)
	e.s = s
	if os.Getenv("BACKEND_BENCH_URL") != "" {
		e.company = gendata.LargeCompany
		c, err := s.ListClients(ctx, e.company, invoicing.ClientFilter{Page: 1, PageSize: 1})
		if err != nil || len(c.Data) == 0 {
			b.Fatalf("BACKEND_BENCH_URL has no large company: %v", err)
		}
		inv, err := s.ListInvoices(ctx, e.company, invoicing.InvoiceFilter{Page: 1, PageSize: 1})
		if err != nil || len(inv.Data) == 0 {
			b.Fatalf("BACKEND_BENCH_URL has no invoices: %v", err)
		}
		e.client, e.invoice = c.Data[0].ID, inv.Data[0].ID
	}
	b.ResetTimer()
	return e
}

func BenchmarkGetClient(b *testing.B) {
	e := setupBench(b)
	s, co, id := e.s, e.company, e.client
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		for pb.Next() {
			if _, err := s.GetClient(ctx, co, id); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkGetClientBarePgx is the floor GetClient is measured against: the
// same row read with a bare pgx pool, no mapping.
func BenchmarkGetClientBarePgx(b *testing.B) {
	e := setupBench(b)
	co, id := e.company, e.client
	pool, err := pgxpool.New(context.Background(), e.url)
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		var cid, name string
		var nif, email, phone, address, kind *string
		var created time.Time
		for pb.Next() {
			err := pool.QueryRow(ctx, `SELECT id, name, nif, email, phone, address, kind, created_at
FROM customers WHERE company_id = $1 AND id = $2 AND deleted_at IS NULL`, co, id).
				Scan(&cid, &name, &nif, &email, &phone, &address, &kind, &created)
			if err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func BenchmarkListInvoices(b *testing.B) {
	e := setupBench(b)
	s, co := e.s, e.company
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		for pb.Next() {
			if _, err := s.ListInvoices(ctx, co, invoicing.InvoiceFilter{Page: 1, PageSize: 20}); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func BenchmarkGetInvoice(b *testing.B) {
	e := setupBench(b)
	s, co, id := e.s, e.company, e.invoice
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		for pb.Next() {
			if _, err := s.GetInvoice(ctx, co, id); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
