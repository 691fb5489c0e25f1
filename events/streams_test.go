package events

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/invoicing"
)

// rowsSource answers the changes' reads with fixed rows (the rest of
// Source is not called by a stream).
type rowsSource struct {
	Source
	invoices, transmissions []invoicing.Changed[invoicing.Invoice]
	clients                 []invoicing.Changed[invoicing.Client]
	asked                   *[]invoicing.ChangeQuery
}

func (r rowsSource) ChangedInvoices(_ context.Context, q invoicing.ChangeQuery) ([]invoicing.Changed[invoicing.Invoice], error) {
	*r.asked = append(*r.asked, q)
	return r.invoices, nil
}

func (r rowsSource) ChangedClients(_ context.Context, q invoicing.ChangeQuery) ([]invoicing.Changed[invoicing.Client], error) {
	*r.asked = append(*r.asked, q)
	return r.clients, nil
}

func (r rowsSource) ChangedTransmissions(_ context.Context, q invoicing.ChangeQuery) ([]invoicing.Changed[invoicing.Invoice], error) {
	*r.asked = append(*r.asked, q)
	return r.transmissions, nil
}

func ts(t time.Time) *invoicing.Timestamp { return &invoicing.Timestamp{Time: t} }

// Each stream of the table reads its own rows, makes each row's events
// (with the row's resource as their data, issues and creations only when
// recent) and answers one position per row, whether the row made an event
// or not, in the rows' order.
func TestStreamsTable(t *testing.T) {
	t.Parallel()
	recent := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	old, now := recent.Add(-time.Hour), recent.Add(time.Hour)
	inv := func(id, status string, issued time.Time, tr *invoicing.Transmission) invoicing.Changed[invoicing.Invoice] {
		return invoicing.Changed[invoicing.Invoice]{CompanyID: testCompany, At: now,
			Resource: invoicing.Invoice{ID: id, Status: status, IssuedAt: ts(issued), UpdatedAt: invoicing.Timestamp{Time: now}, Transmission: tr}}
	}
	cli := func(id string, created, updated time.Time) invoicing.Changed[invoicing.Client] {
		return invoicing.Changed[invoicing.Client]{CompanyID: testCompany, At: updated,
			Resource: invoicing.Client{ID: id, CreatedAt: invoicing.Timestamp{Time: created}, UpdatedAt: invoicing.Timestamp{Time: updated}}}
	}
	sent := &invoicing.Transmission{Status: "VALID", SubmittedAt: ts(now)}
	src := rowsSource{
		invoices:      []invoicing.Changed[invoicing.Invoice]{inv("i-new", "ISSUED", now, nil), inv("i-paid", "PAID", old, nil), inv("i-old", "ISSUED", old, nil)},
		clients:       []invoicing.Changed[invoicing.Client]{cli("c-new", now, now), cli("c-changed", old, now)},
		transmissions: []invoicing.Changed[invoicing.Invoice]{inv("t-sent", "ISSUED", old, sent), inv("t-unsent", "ISSUED", old, nil)},
	}
	cases := []struct {
		stream string
		events []string // type resource, in order
		rows   []string
	}{
		{"invoices", []string{"invoice.issued i-new", "invoice.paid i-paid"}, []string{"i-new", "i-paid", "i-old"}},
		{"clients", []string{"client.created c-new", "client.updated c-changed"}, []string{"c-new", "c-changed"}},
		{"transmissions", []string{"invoice.transmission.updated t-sent"}, []string{"t-sent", "t-unsent"}},
	}
	if len(cases) != len(streams) {
		t.Fatalf("the table has %d streams, the test %d", len(streams), len(cases))
	}
	for _, c := range cases {
		t.Run(c.stream, func(t *testing.T) {
			var asked []invoicing.ChangeQuery
			s := src
			s.asked = &asked
			q := invoicing.ChangeQuery{Companies: []string{testCompany}, From: old, To: now, Limit: pageSize}
			// Every row is of now: a floor after it is each event's commit.
			floor := now.Add(time.Second)
			evs, pos, err := streamNamed(t, c.stream).read(context.Background(), s, invoicing.Test, q, recency{from: recent}, floor)
			if err != nil {
				t.Fatal(err)
			}
			if len(asked) != 1 || !slices.Equal(asked[0].Companies, q.Companies) {
				t.Fatalf("reads %+v, want one with the query given", asked)
			}
			var got []string
			for _, e := range evs {
				got = append(got, fmt.Sprintf("%s %s", e.Type, e.ResourceID))
				var data struct{ ID string }
				if err := json.Unmarshal(e.Data, &data); err != nil || data.ID != e.ResourceID || e.Mode != invoicing.Test || e.CompanyID != testCompany {
					t.Errorf("%s: data %s, mode %s, company %s: want its row's", e.ID, e.Data, e.Mode, e.CompanyID)
				}
				if !e.commit.Equal(floor) {
					t.Errorf("%s: commit %v, want the floor %v (later than its row's time)", e.ID, e.commit, floor)
				}
			}
			if !slices.Equal(got, c.events) {
				t.Errorf("events %q, want %q", got, c.events)
			}
			var rows []string
			for _, p := range pos {
				rows = append(rows, p.ID)
				if !p.At.Equal(now) {
					t.Errorf("position of %s at %v, want the row's change time %v", p.ID, p.At, now)
				}
			}
			if !slices.Equal(rows, c.rows) {
				t.Errorf("positions %q, want one per row %q", rows, c.rows)
			}
		})
	}
}

// The same row read twice makes the same ids: finding a change again
// queues nothing new.
func TestStreamsIDsDependOnTheChangeOnly(t *testing.T) {
	t.Parallel()
	recent := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	row := invoicing.Changed[invoicing.Client]{CompanyID: testCompany, At: recent.Add(time.Minute),
		Resource: invoicing.Client{ID: "c", CreatedAt: invoicing.Timestamp{Time: recent}, UpdatedAt: invoicing.Timestamp{Time: recent.Add(time.Minute)}}}
	var asked []invoicing.ChangeQuery
	src := rowsSource{clients: []invoicing.Changed[invoicing.Client]{row}, asked: &asked}
	read := func(m invoicing.Mode) []string {
		evs, _, err := streamNamed(t, "clients").read(context.Background(), src, m, invoicing.ChangeQuery{}, recency{from: recent}, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, e := range evs {
			ids = append(ids, e.ID)
		}
		return ids
	}
	first, again, live := read(invoicing.Test), read(invoicing.Test), read(invoicing.Live)
	if len(first) != 2 || !slices.Equal(first, again) {
		t.Errorf("ids %v, then %v: want the same two", first, again)
	}
	if slices.ContainsFunc(live, func(id string) bool { return slices.Contains(first, id) }) {
		t.Errorf("the same change in another mode has the same id: %v %v", first, live)
	}
}
