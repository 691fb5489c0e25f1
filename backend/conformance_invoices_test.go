// Conformance: reading invoices, one by id, their transmission, filters, the
// overdue state by the store's clock and an invoice's items.
// runConformance (conformance_test.go) runs these on each database.

package backend_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/backend"
	"github.com/invoicing-ao/gateway/invoicing"
)

func testGetInvoice(t *testing.T, s *backend.Store) {
	inv, err := s.GetInvoice(context.Background(), coA, docFT)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":"21000000-0000-4000-8000-000000000001","number":"FT 2026/137","type":"FT","status":"ISSUED",` +
		`"totalAmount":1732.61,"currency":"AOA","issuedAt":"2026-03-01T09:15:02.120Z","dueDate":"2026-03-31",` +
		`"customer":{"id":"11000000-0000-4000-8000-000000000001","name":"Sonangol Distribuição SA","nif":"5417001234"},` +
		`"items":[{"description":"Consultoria","quantity":2,"unitPrice":750.00,"total":1500.00},` +
		`{"description":"Parafusos","quantity":1.5,"unitPrice":12.3456,"total":18.52},` +
		`{"description":"Cabo","quantity":0.125,"unitPrice":10.50,"total":1.31}],` +
		`"updatedAt":"2026-01-01T00:00:00.000Z",` +
		`"transmission":{"status":"VALID","requestId":"REQ-2","submittedAt":"2026-03-02T10:00:00.500Z",` +
		`"checkedAt":"2026-03-02T11:00:00.250Z","errors":[]}}`
	if got := jsonOf(t, inv); got != want {
		t.Fatalf("invoice JSON\n got %s\nwant %s", got, want)
	}

	big, err := s.GetInvoice(context.Background(), coA, docBig)
	if err != nil {
		t.Fatal(err)
	}
	if got := jsonOf(t, []any{big.TotalAmount, big.Items, big.DueDate, big.Number}); got !=
		`[12345678901234.56,[{"description":"Serviço","quantity":1,"unitPrice":12345678901234.56,"total":12345678901234.56}],null,"FR 2026/1"]` {
		t.Fatalf("exact decimals: %s", got)
	}

	anon, err := s.GetInvoice(context.Background(), coA, docAnon)
	if err != nil {
		t.Fatal(err)
	}
	if got := jsonOf(t, anon.Customer); got != `{"id":null,"name":"Consumidor final","nif":"999999999"}` {
		t.Fatalf("anonymous customer: %s", got)
	}
	draft, err := s.GetInvoice(context.Background(), coA, docPFDraft)
	if err != nil {
		t.Fatal(err)
	}
	if draft.IssuedAt != nil || draft.DueDate != nil || draft.Status != "DRAFT" {
		t.Fatalf("draft: %s", jsonOf(t, draft))
	}

	statuses := map[string]string{
		docFT: "ISSUED", docOverdue: "OVERDUE", docDueNow: "ISSUED", docBig: "PAID", docFS: "CANCELLED",
		docNC: "ISSUED", docND: "OVERDUE", docPFDraft: "DRAFT", docFTDraft: "DRAFT", docPF: "ISSUED",
		docAnon: "PAID", docPaidOld: "PAID", docFRLate: "ISSUED", docFSLate: "ISSUED",
	}
	for id, want := range statuses {
		inv, err := s.GetInvoice(context.Background(), coA, id)
		if err != nil || inv.Status != want {
			t.Errorf("status of %s = %q, %v; want %s", id, inv.Status, err, want)
		}
	}
}

func testTransmission(t *testing.T, s *backend.Store) {
	cases := map[string]string{
		docFT:      `{"status":"VALID","requestId":"REQ-2","submittedAt":"2026-03-02T10:00:00.500Z","checkedAt":"2026-03-02T11:00:00.250Z","errors":[]}`,
		docOverdue: `{"status":"PENDING","requestId":null,"submittedAt":"2026-03-03T10:00:00.000Z","checkedAt":null,"errors":[]}`,
		docDueNow: `{"status":"INVALID","requestId":"REQ-1","submittedAt":"2026-03-01T10:00:00.000Z","checkedAt":"2026-03-01T11:00:00.000Z",` +
			`"errors":[{"code":"E11","message":"NIF do adquirente inválido"},{"code":"E20","message":"Data de emissão fora do período"}]}`,
		docBig:     `{"status":"VALID","requestId":"REQ-5","submittedAt":"2026-03-04T10:00:00.000Z","checkedAt":"2026-03-04T12:00:00.000Z","errors":[]}`,
		docFS:      `{"status":"NOT_SENT","requestId":null,"submittedAt":null,"checkedAt":null,"errors":[]}`,
		docPF:      `{"status":"NOT_APPLICABLE","requestId":null,"submittedAt":null,"checkedAt":null,"errors":[]}`,
		docPFDraft: `{"status":"NOT_APPLICABLE","requestId":null,"submittedAt":null,"checkedAt":null,"errors":[]}`,
	}
	for id, want := range cases {
		inv, err := s.GetInvoice(context.Background(), coA, id)
		if err != nil {
			t.Fatalf("GetInvoice(%s): %v", id, err)
		}
		if got := jsonOf(t, inv.Transmission); got != want {
			t.Errorf("transmission of %s\n got %s\nwant %s", id, got, want)
		}
	}
}

func invoiceIDs(p invoicing.Page[invoicing.Invoice]) []string {
	ids := make([]string, len(p.Data))
	for i, inv := range p.Data {
		ids[i] = inv.ID
	}
	return ids
}

func testInvoiceFilters(t *testing.T, s *backend.Store) {
	all := []string{docFTDraft, docPFDraft, docNC, docPF, docAnon, docFT, docMidn, docBefore, docDueNow,
		docOverdue, docBig, docFS, docFSLate, docFRLate, docND, docTieHigh, docTieLow, docPaidOld}
	cases := []struct {
		name string
		f    invoicing.InvoiceFilter
		want []string
	}{
		{"none", invoicing.InvoiceFilter{}, all},
		{"DRAFT", invoicing.InvoiceFilter{Status: "DRAFT"}, []string{docFTDraft, docPFDraft}},
		// PF, NC, FR and FS past their due dates stay ISSUED: only FT and ND are late payments.
		{"ISSUED", invoicing.InvoiceFilter{Status: "ISSUED"}, []string{docNC, docPF, docFT, docMidn, docBefore, docDueNow, docFSLate, docFRLate}},
		{"OVERDUE", invoicing.InvoiceFilter{Status: "OVERDUE"}, []string{docOverdue, docND}},
		{"PAID", invoicing.InvoiceFilter{Status: "PAID"}, []string{docAnon, docBig, docTieHigh, docTieLow, docPaidOld}},
		{"CANCELLED", invoicing.InvoiceFilter{Status: "CANCELLED"}, []string{docFS}},
		{"FT", invoicing.InvoiceFilter{Type: "FT"}, []string{docFTDraft, docFT, docMidn, docBefore, docDueNow, docOverdue, docPaidOld}},
		{"FR", invoicing.InvoiceFilter{Type: "FR"}, []string{docBig, docFRLate, docTieHigh, docTieLow}},
		{"FS", invoicing.InvoiceFilter{Type: "FS"}, []string{docAnon, docFS, docFSLate}},
		{"NC", invoicing.InvoiceFilter{Type: "NC"}, []string{docNC}},
		{"ND", invoicing.InvoiceFilter{Type: "ND"}, []string{docND}},
		{"PF", invoicing.InvoiceFilter{Type: "PF"}, []string{docPFDraft, docPF}},
		{"from", invoicing.InvoiceFilter{From: "2026-03-01"}, []string{docNC, docPF, docAnon, docFT, docMidn}},
		{"to", invoicing.InvoiceFilter{To: "2026-02-28"}, []string{docBefore, docDueNow, docOverdue, docBig, docFS, docFSLate, docFRLate, docND, docTieHigh, docTieLow, docPaidOld}},
		{"one day", invoicing.InvoiceFilter{From: "2026-03-01", To: "2026-03-01"}, []string{docFT, docMidn}},
		{"empty range", invoicing.InvoiceFilter{From: "2026-03-02", To: "2026-03-01"}, nil},
		{"combined", invoicing.InvoiceFilter{Status: "ISSUED", Type: "FT", From: "2026-02-21", To: "2026-03-01"},
			[]string{docFT, docMidn, docBefore, docDueNow}},
		{"OVERDUE FT", invoicing.InvoiceFilter{Status: "OVERDUE", Type: "FT"}, []string{docOverdue}},
		{"OVERDUE PF", invoicing.InvoiceFilter{Status: "OVERDUE", Type: "PF"}, nil},
		{"ISSUED FR", invoicing.InvoiceFilter{Status: "ISSUED", Type: "FR"}, []string{docFRLate}},
		{"drafts never match dates", invoicing.InvoiceFilter{Status: "DRAFT", From: "2000-01-01"}, nil},
	}
	for _, tc := range cases {
		tc.f.Page, tc.f.PageSize = 1, 100
		p, err := s.ListInvoices(context.Background(), coA, tc.f)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := invoiceIDs(p); !slices.Equal(got, tc.want) || p.Total != int64(len(tc.want)) {
			t.Errorf("%s = %v (total %d)\nwant %v", tc.name, got, p.Total, tc.want)
		}
		for _, inv := range p.Data {
			if tc.f.Status != "" && inv.Status != tc.f.Status {
				t.Errorf("%s: %s has status %s", tc.name, inv.ID, inv.Status)
			}
			if inv.Transmission != nil {
				t.Errorf("%s: list carries a transmission", tc.name)
			}
		}
	}
}

// testOverdueClock moves the injected clock around midnight in Luanda (UTC+1).
func testOverdueClock(t *testing.T, url string) {
	cases := []struct {
		now  time.Time
		want string
	}{
		{time.Date(2026, 3, 10, 22, 59, 59, 0, time.UTC), "ISSUED"}, // 23:59:59 on the 10th in Luanda
		{time.Date(2026, 3, 10, 23, 0, 0, 0, time.UTC), "OVERDUE"},  // 00:00 on the 11th in Luanda
	}
	for _, tc := range cases {
		s := openStore(t, url, tc.now)
		inv, err := s.GetInvoice(context.Background(), coA, docDueNow)
		if err != nil || inv.Status != tc.want {
			t.Errorf("at %s: status %q, %v; want %s", tc.now, inv.Status, err, tc.want)
		}
		p, err := s.ListInvoices(context.Background(), coA, invoicing.InvoiceFilter{Status: tc.want, Type: "FT", From: "2026-02-21", To: "2026-02-21", Page: 1, PageSize: 10})
		if err != nil || !slices.Equal(invoiceIDs(p), []string{docDueNow}) {
			t.Errorf("at %s: filter %s = %v, %v", tc.now, tc.want, invoiceIDs(p), err)
		}
	}
}

func testListItems(t *testing.T, s *backend.Store) {
	p, err := s.ListInvoices(context.Background(), coA, invoicing.InvoiceFilter{Page: 1, PageSize: 100})
	if err != nil {
		t.Fatal(err)
	}
	for _, inv := range p.Data {
		one, err := s.GetInvoice(context.Background(), coA, inv.ID)
		if err != nil {
			t.Fatal(err)
		}
		one.Transmission = nil
		if jsonOf(t, inv) != jsonOf(t, one) {
			t.Errorf("list entry != get\n list %s\n get  %s", jsonOf(t, inv), jsonOf(t, one))
		}
	}
}
