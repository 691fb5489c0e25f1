package backend_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/backend"
	"github.com/invoicing-ao/gateway/invoicing"
)

// testEventChanges checks the events' reads on the fixtures: every resource
// as GET answers it, the window and the companies respected, the (time, id)
// order, and pages that continue from a position without repeat or gap.
func testEventChanges(t *testing.T, s *backend.Store) {
	ctx := context.Background()
	all := invoicing.ChangeQuery{Companies: []string{coA}, From: ts("2025-01-01T00:00:00Z"), To: ts("2027-01-01T00:00:00Z"), Limit: 1000}

	invs := checkChangedInvoices(ctx, t, s, all)
	checkChangedInvoicePages(ctx, t, s, all, invs)
	checkChangeWindow(ctx, t, s, all, invs[0].At)
	checkOverdueInvoices(ctx, t, s)
	checkChangedTransmissions(ctx, t, s, all)
	checkChangedClients(ctx, t, s, all)

	now, err := s.Changes().DatabaseNow(ctx)
	if err != nil || now.IsZero() {
		t.Fatalf("DatabaseNow: %v, %v", now, err)
	}
	if s.Engine() == "postgres" && time.Until(now).Abs() > time.Minute {
		t.Errorf("PostgreSQL's clock %v is far from this process's", now)
	}
}

// checkChangedInvoices reads all of company A's changed invoices and checks
// each is as GET answers it, in (time, id) order. It returns them.
func checkChangedInvoices(ctx context.Context, t *testing.T, s *backend.Store, all invoicing.ChangeQuery) []invoicing.Changed[invoicing.Invoice] {
	t.Helper()
	invs, err := s.Changes().ChangedInvoices(ctx, all)
	if err != nil {
		t.Fatal(err)
	}
	if len(invs) < 15 {
		t.Fatalf("%d changed invoices of company A", len(invs))
	}
	for i, c := range invs {
		if c.CompanyID != coA {
			t.Fatalf("another company's invoice: %+v", c)
		}
		get, err := s.GetInvoice(ctx, coA, c.Resource.ID)
		if err != nil {
			t.Fatal(err)
		}
		if jsonOf(t, c.Resource) != jsonOf(t, get) {
			t.Errorf("changed invoice %s:\n%s\nGET:\n%s", c.Resource.ID, jsonOf(t, c.Resource), jsonOf(t, get))
		}
		if !c.At.Equal(get.UpdatedAt.Time) {
			t.Errorf("%s: at %v, updatedAt %v", c.Resource.ID, c.At, get.UpdatedAt)
		}
		if i > 0 && (c.At.Before(invs[i-1].At) || c.At.Equal(invs[i-1].At) && c.Resource.ID <= invs[i-1].Resource.ID) {
			t.Fatalf("out of (time, id) order at %d", i)
		}
	}
	return invs
}

// checkChangedInvoicePages checks that pages of 7 from each page's last
// position give the same list as the whole read, invs.
func checkChangedInvoicePages(ctx context.Context, t *testing.T, s *backend.Store, all invoicing.ChangeQuery, invs []invoicing.Changed[invoicing.Invoice]) {
	t.Helper()
	var paged []string
	q := all
	q.Limit = 7
	for {
		page, err := s.Changes().ChangedInvoices(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range page {
			paged = append(paged, c.Resource.ID)
		}
		if len(page) < q.Limit {
			break
		}
		last := page[len(page)-1]
		q.After = &invoicing.Position{At: &last.At, ID: last.Resource.ID}
	}
	var whole []string
	for _, c := range invs {
		whole = append(whole, c.Resource.ID)
	}
	if !slices.Equal(paged, whole) {
		t.Errorf("pages of 7 gave %d ids, the whole list %d", len(paged), len(whole))
	}
}

// checkChangeWindow checks that the window's end is excluded, its start
// included (at is a change's time), and that the companies are respected.
func checkChangeWindow(ctx context.Context, t *testing.T, s *backend.Store, all invoicing.ChangeQuery, at time.Time) {
	t.Helper()
	if got, _ := s.Changes().ChangedInvoices(ctx, invoicing.ChangeQuery{Companies: []string{coA}, From: at, To: at, Limit: 10}); len(got) != 0 {
		t.Errorf("an empty window gave %d", len(got))
	}
	if got, _ := s.Changes().ChangedInvoices(ctx, invoicing.ChangeQuery{Companies: []string{coA}, From: at, To: at.Add(time.Microsecond), Limit: 1000}); len(got) == 0 || !got[0].At.Equal(at) {
		t.Errorf("a window starting at a change missed it: %d", len(got))
	}
	if got, err := s.Changes().ChangedInvoices(ctx, invoicing.ChangeQuery{From: all.From, To: all.To, Limit: 10}); err != nil || len(got) != 0 {
		t.Errorf("no companies: %d, %v", len(got), err)
	}
	if _, err := s.Changes().ChangedInvoices(ctx, invoicing.ChangeQuery{Companies: []string{"nope"}, From: all.From, To: all.To, Limit: 10}); err == nil {
		t.Error("a malformed company id was accepted")
	}
}

// checkOverdueInvoices checks the overdue invoices on the fixtures' day:
// the issued FT and ND due before it.
func checkOverdueInvoices(ctx context.Context, t *testing.T, s *backend.Store) {
	t.Helper()
	today := fixedNow.In(luanda()).Format("2006-01-02")
	over, err := s.Changes().OverdueInvoices(ctx, invoicing.OverdueQuery{Companies: []string{coA, coB}, From: "2026-01-01", To: today, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var overIDs []string
	for _, c := range over {
		overIDs = append(overIDs, c.Resource.ID)
		if c.Resource.Status != "OVERDUE" {
			t.Errorf("%s: status %s", c.Resource.ID, c.Resource.Status)
		}
	}
	if want := []string{docOverdue, docND}; !sameSet(overIDs, want) {
		t.Errorf("overdue %v, want %v", overIDs, want)
	}
	if page, _ := s.Changes().OverdueInvoices(ctx, invoicing.OverdueQuery{Companies: []string{coA}, From: "2026-01-01", To: today, AfterID: over[0].Resource.ID, Limit: 100}); len(page) != len(over)-1 {
		t.Errorf("after the first, %d of %d", len(page), len(over))
	}
}

// checkChangedTransmissions checks each submission's documents, at the
// later of its times.
func checkChangedTransmissions(ctx context.Context, t *testing.T, s *backend.Store, all invoicing.ChangeQuery) {
	t.Helper()
	trs, err := s.Changes().ChangedTransmissions(ctx, all)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, c := range trs {
		seen[c.Resource.ID]++
		get, _ := s.GetInvoice(ctx, coA, c.Resource.ID)
		if jsonOf(t, c.Resource) != jsonOf(t, get) {
			t.Errorf("transmission of %s:\n%s\nGET:\n%s", c.Resource.ID, jsonOf(t, c.Resource), jsonOf(t, get))
		}
	}
	if seen[docFT] != 2 || seen[docDueNow] != 1 || seen[docOverdue] != 1 || seen[docBig] != 2 || seen[docPF] != 1 {
		t.Errorf("transmission changes by document: %v", seen)
	}
	late := invoicing.ChangeQuery{Companies: []string{coA}, From: ts("2026-03-02T11:00:00.25Z"), To: ts("2026-03-02T11:00:00.26Z"), Limit: 10}
	if got, _ := s.Changes().ChangedTransmissions(ctx, late); len(got) != 1 || got[0].Resource.ID != docFT || !got[0].At.Equal(ts("2026-03-02T11:00:00.25Z")) {
		t.Errorf("AGT's answer at its checked_at: %+v", got)
	}
}

// checkChangedClients checks the changed clients: the live ones, as GET
// answers them.
func checkChangedClients(ctx context.Context, t *testing.T, s *backend.Store, all invoicing.ChangeQuery) {
	t.Helper()
	cls, err := s.Changes().ChangedClients(ctx, all)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cls {
		if c.Resource.ID == cliDeleted {
			t.Error("a deleted client is listed")
		}
		get, err := s.GetClient(ctx, coA, c.Resource.ID)
		if err != nil || jsonOf(t, c.Resource) != jsonOf(t, get) {
			t.Errorf("changed client %s: %v\n%s\nGET:\n%s", c.Resource.ID, err, jsonOf(t, c.Resource), jsonOf(t, get))
		}
	}
	if len(cls) < 8 {
		t.Errorf("%d clients", len(cls))
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

func luanda() *time.Location {
	loc, err := time.LoadLocation("Africa/Luanda")
	if err != nil {
		return time.FixedZone("WAT", 3600)
	}
	return loc
}
