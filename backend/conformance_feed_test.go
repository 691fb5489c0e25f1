package backend_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/invoicing-ao/gateway/backend"
	"github.com/invoicing-ao/gateway/invoicing"
)

// testAllCompaniesChanges checks the reads of every company (All), which
// the events feed's detection makes: the union of the companies' own
// reads, in the same (time, id) order, with every company's rows.
func testAllCompaniesChanges(t *testing.T, s *backend.Store) {
	ctx := context.Background()
	from, to := ts("2025-01-01T00:00:00Z"), ts("2027-01-01T00:00:00Z")
	one := func(companies ...string) invoicing.ChangeQuery {
		return invoicing.ChangeQuery{Companies: companies, From: from, To: to, Limit: 1000}
	}
	every := invoicing.ChangeQuery{All: true, Companies: []string{"ignored"}, From: from, To: to, Limit: 1000}
	reads := map[string]func(context.Context, invoicing.ChangeQuery) ([]string, error){
		"invoices": func(ctx context.Context, q invoicing.ChangeQuery) ([]string, error) {
			return ids(s.Changes().ChangedInvoices(ctx, q))
		},
		"clients": func(ctx context.Context, q invoicing.ChangeQuery) ([]string, error) {
			return ids(s.Changes().ChangedClients(ctx, q))
		},
		"transmissions": func(ctx context.Context, q invoicing.ChangeQuery) ([]string, error) {
			return ids(s.Changes().ChangedTransmissions(ctx, q))
		},
	}
	for name, read := range reads {
		all, err := read(ctx, every)
		if err != nil {
			t.Fatalf("%s, every company: %v", name, err)
		}
		both, err := read(ctx, one(coA, coB))
		if err != nil {
			t.Fatal(err)
		}
		if a, _ := read(ctx, one(coA)); name != "transmissions" && len(both) <= len(a) {
			t.Fatalf("%s: the fixtures need changes of company B too (%d, %d)", name, len(both), len(a))
		}
		var ofAB []string // every company's read, narrowed to A and B
		for _, r := range all {
			if strings.HasPrefix(r, coA) || strings.HasPrefix(r, coB) {
				ofAB = append(ofAB, r)
			}
		}
		if !slices.Equal(ofAB, both) {
			t.Errorf("%s: every company's read has %d rows of A and B, their own read %d", name, len(ofAB), len(both))
		}
		if name != "transmissions" && len(all) <= len(both) {
			t.Errorf("%s: every company's read (%d rows) has no other company's", name, len(all))
		}
	}
	today := fixedNow.In(luanda()).Format("2006-01-02")
	over, err := s.Changes().OverdueInvoices(ctx, invoicing.OverdueQuery{All: true, From: "2026-01-01", To: today, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	named, _ := s.Changes().OverdueInvoices(ctx, invoicing.OverdueQuery{Companies: []string{coA, coB}, From: "2026-01-01", To: today, Limit: 100})
	if len(over) < len(named) || len(named) == 0 {
		t.Errorf("overdue of every company: %d, of A and B: %d", len(over), len(named))
	}
}

// ids name the rows of a change read (company and time), in its order.
func ids[T any](rows []invoicing.Changed[T], err error) ([]string, error) {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.CompanyID + "/" + r.At.String()
	}
	return out, err
}
