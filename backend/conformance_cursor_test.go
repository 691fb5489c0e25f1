package backend_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/backend"
	"github.com/invoicing-ao/gateway/invoicing"
)

// walk lists every page of a list, each after the previous page's Next,
// checking the envelope, and returns the ids in order.
func walk[T any](t *testing.T, size int, total int64, list func(after *invoicing.Position) (invoicing.Page[T], error), id func(T) string) []string {
	t.Helper()
	var ids []string
	var after *invoicing.Position
	for n := 0; ; n++ {
		p, err := list(after)
		if err != nil {
			t.Fatal(err)
		}
		if p.Total != total || p.PageSize != size || (after != nil) != (p.Page == 0) || len(p.Data) > size {
			t.Fatalf("page %d: envelope total %d page %d size %d, %d rows", n, p.Total, p.Page, p.PageSize, len(p.Data))
		}
		for _, v := range p.Data {
			ids = append(ids, id(v))
		}
		if p.Next == nil {
			return ids
		}
		if len(p.Data) != size || p.Next.ID != ids[len(ids)-1] {
			t.Fatalf("page %d: a next position after a short page, or not the last item's", n)
		}
		after = p.Next
	}
}

func invID(v invoicing.Invoice) string { return v.ID }
func cliID(v invoicing.Client) string  { return v.ID }

// testCursors: walking by position gives the same order as walking by page
// number, for every page size, with and without a filter.
func testCursors(t *testing.T, s *backend.Store) {
	ctx := context.Background()
	wantDocs, wantClients := expectedDocOrder(), expectedClientOrder()
	paid := slices.DeleteFunc(slices.Clone(wantDocs), func(id string) bool {
		for _, d := range pagDocuments() {
			if d.ID == id {
				return d.State != "paid"
			}
		}
		return true
	})
	for _, size := range []int{1, 7, 100} {
		got := walk(t, size, pagDocs, func(after *invoicing.Position) (invoicing.Page[invoicing.Invoice], error) {
			return s.ListInvoices(ctx, coP, invoicing.InvoiceFilter{Page: 1, PageSize: size, After: after})
		}, invID)
		if !slices.Equal(got, wantDocs) {
			t.Fatalf("invoices by position, size %d: %d ids, order differs from the expected %d", size, len(got), len(wantDocs))
		}
		got = walk(t, size, int64(len(paid)), func(after *invoicing.Position) (invoicing.Page[invoicing.Invoice], error) {
			return s.ListInvoices(ctx, coP, invoicing.InvoiceFilter{Status: "PAID", Page: 1, PageSize: size, After: after})
		}, invID)
		if !slices.Equal(got, paid) {
			t.Fatalf("PAID invoices by position, size %d: %d ids, want %d", size, len(got), len(paid))
		}
		got = walk(t, size, pagClients, func(after *invoicing.Position) (invoicing.Page[invoicing.Client], error) {
			return s.ListClients(ctx, coP, invoicing.ClientFilter{Page: 1, PageSize: size, After: after})
		}, cliID)
		if !slices.Equal(got, wantClients) {
			t.Fatalf("clients by position, size %d: got %v\nwant %v", size, got, wantClients)
		}
	}
	bad := []*invoicing.Position{{ID: "not-an-id"}, {ID: "C0000000-0000-4000-8000-00000000000C"}}
	for _, p := range bad {
		if _, err := s.ListInvoices(ctx, coP, invoicing.InvoiceFilter{Page: 1, PageSize: 5, After: p}); !errors.Is(err, backend.ErrInvalid) {
			t.Errorf("position %+v: %v, want ErrInvalid", p, err)
		}
	}
	if _, err := s.ListClients(ctx, coP, invoicing.ClientFilter{Page: 1, PageSize: 5, After: &invoicing.Position{ID: wantClients[0]}}); !errors.Is(err, backend.ErrInvalid) {
		t.Errorf("a client position without a time: %v, want ErrInvalid", err)
	}
}

// testChanges: UpdatedSince lists what changed at or after the instant, oldest
// change first (ties by id), by position or by page number alike.
func testChanges(t *testing.T, s *backend.Store) {
	ctx := context.Background()
	since := ts("2026-02-01T00:05:00Z")
	type row struct {
		id string
		at time.Time
	}
	var docs, clients []row
	for _, d := range pagDocuments() {
		if !d.UpdatedAt.Before(since) {
			docs = append(docs, row{d.ID, d.UpdatedAt})
		}
	}
	for _, c := range pagCustomers() {
		if !c.UpdatedAt.Before(since) {
			clients = append(clients, row{c.ID, c.UpdatedAt})
		}
	}
	order := func(rs []row) []string {
		sort.Slice(rs, func(i, j int) bool {
			if !rs[i].at.Equal(rs[j].at) {
				return rs[i].at.Before(rs[j].at)
			}
			return rs[i].id < rs[j].id
		})
		ids := make([]string, len(rs))
		for i, r := range rs {
			ids[i] = r.id
		}
		return ids
	}
	wantDocs, wantClients := order(docs), order(clients)
	if len(wantDocs) == 0 || len(wantDocs) == pagDocs || len(wantClients) == 0 || len(wantClients) == pagClients {
		t.Fatal("the fixtures do not exercise the filter")
	}
	for _, size := range []int{3, 50} {
		got := walk(t, size, int64(len(wantDocs)), func(after *invoicing.Position) (invoicing.Page[invoicing.Invoice], error) {
			return s.ListInvoices(ctx, coP, invoicing.InvoiceFilter{UpdatedSince: &since, Page: 1, PageSize: size, After: after})
		}, invID)
		if !slices.Equal(got, wantDocs) {
			t.Fatalf("invoice changes, size %d: %d ids, want %d in updatedAt, id order", size, len(got), len(wantDocs))
		}
		var byPage []string
		for page := 1; ; page++ {
			p, err := s.ListInvoices(ctx, coP, invoicing.InvoiceFilter{UpdatedSince: &since, Page: page, PageSize: size})
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Data) == 0 {
				break
			}
			byPage = append(byPage, invoiceIDs(p)...)
		}
		if !slices.Equal(byPage, wantDocs) {
			t.Fatalf("invoice changes by page number, size %d: differ", size)
		}
		got = walk(t, size, int64(len(wantClients)), func(after *invoicing.Position) (invoicing.Page[invoicing.Client], error) {
			return s.ListClients(ctx, coP, invoicing.ClientFilter{UpdatedSince: &since, Page: 1, PageSize: size, After: after})
		}, cliID)
		if !slices.Equal(got, wantClients) {
			t.Fatalf("client changes, size %d: got %v\nwant %v", size, got, wantClients)
		}
	}
	inv, err := s.GetInvoice(ctx, coP, wantDocs[0])
	if err != nil || inv.UpdatedAt.Before(since) {
		t.Fatalf("the first change's updatedAt: %v, %v", inv.UpdatedAt, err)
	}
}

// testCursorWhileInserting: clients created while a walk by position is
// under way (newer than its position) neither shift nor repeat it; a walk
// by page numbers would repeat items.
func testCursorWhileInserting(t *testing.T, url string) {
	ctx := context.Background()
	// A clock that moves, as time does: each create is newer than the last.
	var ticks atomic.Int64
	s, err := backend.Open(ctx, backend.Config{URL: url, Now: func() time.Time {
		return fixedNow.Add(time.Hour + time.Duration(ticks.Add(1))*time.Millisecond)
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	before, err := s.ListClients(ctx, coW, invoicing.ClientFilter{Page: 1, PageSize: 100})
	if err != nil {
		t.Fatal(err)
	}
	want := clientIDs(before)
	inserted := 0
	got := walk(t, 2, -1, func(after *invoicing.Position) (invoicing.Page[invoicing.Client], error) {
		p, err := s.ListClients(ctx, coW, invoicing.ClientFilter{Page: 1, PageSize: 2, After: after})
		if after != nil && inserted < 3 {
			inserted++
			if _, err := s.CreateClient(ctx, coW, invoicing.NewClient{Name: fmt.Sprintf("Durante %d", inserted)}); err != nil {
				t.Fatal(err)
			}
		}
		p.Total = -1 // the total changes with the inserts
		return p, err
	}, cliID)
	if inserted == 0 || !slices.Equal(got, want) {
		t.Fatalf("walk while inserting %d clients: got %v\nwant %v", inserted, got, want)
	}
}
