package backend_test

import (
	"fmt"
	"sort"
	"time"

	g "github.com/invoicing-ao/gateway/backend/gendata"
)

// Precise fixtures of the conformance suite: every value is chosen so the
// expected API output is known. Clock: 2026-03-10 13:00 in Luanda.
var fixedNow = time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)

const (
	coA    = "a0000000-0000-4000-8000-00000000000a" // the main company
	coB    = "b0000000-0000-4000-8000-00000000000b" // another tenant
	coP    = "c0000000-0000-4000-8000-00000000000c" // pagination
	coW    = "d0000000-0000-4000-8000-00000000000d" // writes (create client)
	coSusp = "e0000000-0000-4000-8000-00000000000e" // suspended

	cliCompany  = "11000000-0000-4000-8000-000000000001"
	cliIndiv    = "11000000-0000-4000-8000-000000000002"
	cliNullKind = "11000000-0000-4000-8000-000000000003"
	cliSpaced   = "11000000-0000-4000-8000-000000000004"
	cliForeign  = "11000000-0000-4000-8000-000000000005"
	cliOdd      = "11000000-0000-4000-8000-000000000006"
	cliDeleted  = "11000000-0000-4000-8000-000000000007"
	cliTieLow   = "11000000-0000-4000-8000-000000000008"
	cliTieHigh  = "11000000-0000-4000-8000-000000000009"
	cliB        = "12000000-0000-4000-8000-000000000001"
	cliWTyped   = "13000000-0000-4000-8000-000000000001" // NIF typed with spaces
	cliWDeleted = "13000000-0000-4000-8000-000000000002" // deleted, NIF free
	cliSandbox  = "14000000-0000-4000-8000-000000000001"

	docFT      = "21000000-0000-4000-8000-000000000001" // issued, due later: ISSUED, VALID after a resubmission
	docOverdue = "21000000-0000-4000-8000-000000000002" // issued, due yesterday: OVERDUE, PENDING
	docDueNow  = "21000000-0000-4000-8000-000000000003" // issued, due today: ISSUED, INVALID
	docBig     = "21000000-0000-4000-8000-000000000004" // FR paid, huge amount, tie of submissions
	docFS      = "21000000-0000-4000-8000-000000000005" // FS cancelled, NOT_SENT
	docNC      = "21000000-0000-4000-8000-000000000006" // NC issued, no due date
	docND      = "21000000-0000-4000-8000-000000000007" // ND issued, overdue
	docPFDraft = "21000000-0000-4000-8000-000000000008" // PF draft
	docFTDraft = "21000000-0000-4000-8000-000000000009" // FT draft
	docPF      = "21000000-0000-4000-8000-00000000000a" // PF issued, has a submission row
	docAnon    = "21000000-0000-4000-8000-00000000000b" // FS paid, anonymous consumer
	docMidn    = "21000000-0000-4000-8000-00000000000c" // issued at 00:00 Luanda, 1 March
	docBefore  = "21000000-0000-4000-8000-00000000000d" // issued at 23:59:59.999999 Luanda, 28 Feb
	docTieLow  = "21000000-0000-4000-8000-00000000000e" // same issuedAt as docTieHigh
	docTieHigh = "21000000-0000-4000-8000-00000000000f"
	docPaidOld = "21000000-0000-4000-8000-000000000010" // paid, due long ago: PAID
	docFRLate  = "21000000-0000-4000-8000-000000000011" // FR issued, past its due date: ISSUED (paid at issue)
	docFSLate  = "21000000-0000-4000-8000-000000000012" // FS issued, past its due date: ISSUED
	docB       = "22000000-0000-4000-8000-000000000001"
	docSandbox = "24000000-0000-4000-8000-000000000001"
)

func ts(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t
}

func tsp(s string) *time.Time { t := ts(s); return &t }

var p = g.Ptr[string]

func customer(id, co, name string, nif, phone, kind *string, created string) g.Customer {
	return g.Customer{ID: id, CompanyID: co, Name: name, NIF: nif, Phone: phone, Kind: kind, CreatedAt: ts(created)}
}

func doc(id, co, typ string, seq int, state string, issued *time.Time, due *string, gross string) g.Document {
	return g.Document{
		ID: id, CompanyID: co, DocType: typ, Series: "2026", Seq: seq, State: state,
		CustomerID: p(cliCompany), CustomerName: "Sonangol Distribuição SA", CustomerNIF: p("5417001234"),
		Currency: "AOA", NetTotal: gross, TaxTotal: "0.00", GrossTotal: gross,
		IssuedAt: issued, DueDate: due, CreatedAt: ts("2026-01-01T00:00:00Z"),
		Lines: []g.Line{{LineNo: 1, Description: "Serviço", Quantity: "1.000", UnitPrice: gross + "00", TaxRate: "0.00", LineTotal: gross}},
	}
}

// liveFixtures is the live database: the precise rows and the pagination
// company.
func liveFixtures() *g.Dataset {
	d := &g.Dataset{
		Companies: []g.Company{
			{ID: coA, LegalName: "Empresa A Lda", NIF: "5000000001", Status: "active", CreatedAt: ts("2025-01-01T00:00:00Z")},
			{ID: coB, LegalName: "Empresa B Lda", NIF: "5000000002", Status: "active", CreatedAt: ts("2025-01-01T00:00:00Z")},
			{ID: coP, LegalName: "Empresa P Lda", NIF: "5000000003", Status: "active", CreatedAt: ts("2025-01-01T00:00:00Z")},
			{ID: coW, LegalName: "Empresa W Lda", NIF: "5000000004", Status: "active", CreatedAt: ts("2025-01-01T00:00:00Z")},
			{ID: coSusp, LegalName: "Empresa Suspensa", NIF: "5000000005", Status: "suspended", CreatedAt: ts("2025-01-01T00:00:00Z")},
		},
		Customers:   liveCustomers(),
		Documents:   liveDocuments(),
		Submissions: liveSubmissions(),
	}
	d.Customers = append(d.Customers, pagCustomers()...)
	d.Documents = append(d.Documents, pagDocuments()...)
	return d
}

// liveCustomers are the live database's clients of companies A, B and W.
func liveCustomers() []g.Customer {
	full := customer(cliCompany, coA, "Sonangol Distribuição SA", p("5417001234"), p("+244923456789"), p("C"), "2026-01-05T10:00:00.120Z")
	full.Email, full.Address = p("geral@sonangol.example"), p("Rua Rainha Ginga 29, Luanda")
	deleted := customer(cliDeleted, coA, "Apagado Lda", p("5417005555"), nil, p("C"), "2026-01-20T00:00:00Z")
	deleted.DeletedAt = tsp("2026-02-01T00:00:00Z")
	wDeleted := customer(cliWDeleted, coW, "Antigo Cliente", p("5999000002"), nil, p("C"), "2026-01-01T00:00:00Z")
	wDeleted.DeletedAt = tsp("2026-02-01T00:00:00Z")
	return []g.Customer{
		full,
		customer(cliIndiv, coA, "João Manuel", p("000238553ca017"), p("923456780"), p("I"), "2026-01-06T08:30:15.5Z"),
		customer(cliNullKind, coA, "Maria 100% Santos_Lda", nil, p("923 456 781"), nil, "2026-01-07T00:00:00Z"),
		customer(cliSpaced, coA, "Kwanza Tech", p("541 700 9999"), p("+244 923 456 782"), p("C"), "2026-01-08T00:00:00Z"),
		customer(cliForeign, coA, "LISBOA ÉVORA Trading", p("PT123456"), p("+351912345678"), p("C"), "2026-01-09T00:00:00Z"),
		customer(cliOdd, coA, "Odd Phone", nil, p("12345"), p("I"), "2026-01-10T00:00:00Z"),
		deleted,
		customer(cliTieLow, coA, "Tie Low", nil, nil, nil, "2026-01-11T00:00:00Z"),
		customer(cliTieHigh, coA, "Tie High", nil, nil, nil, "2026-01-11T00:00:00Z"),
		customer(cliB, coB, "Cliente de B", p("5417001234"), nil, p("C"), "2026-01-05T00:00:00Z"),
		customer(cliWTyped, coW, "Já Existe", p("5999 000 001"), nil, p("C"), "2026-01-01T00:00:00Z"),
		wDeleted,
	}
}

// liveDocuments are the live database's documents of companies A and B.
func liveDocuments() []g.Document {
	ft := doc(docFT, coA, "FT", 137, "issued", tsp("2026-03-01T09:15:02.120Z"), p("2026-03-31"), "1500.00")
	ft.Lines = []g.Line{
		{LineNo: 1, Description: "Consultoria", Quantity: "2.000", UnitPrice: "750.0000", TaxRate: "14.00", LineTotal: "1500.00"},
		{LineNo: 2, Description: "Parafusos", Quantity: "1.500", UnitPrice: "12.3456", TaxRate: "14.00", LineTotal: "18.52"},
		{LineNo: 3, Description: "Cabo", Quantity: "0.125", UnitPrice: "10.5000", TaxRate: "14.00", LineTotal: "1.31"},
	}
	ft.NetTotal, ft.TaxTotal, ft.GrossTotal = "1519.83", "212.78", "1732.61"
	big := doc(docBig, coA, "FR", 1, "paid", tsp("2026-02-15T10:00:00Z"), nil, "12345678901234.56")
	nc := doc(docNC, coA, "NC", 1, "issued", tsp("2026-03-05T08:00:00Z"), p("2026-03-06"), "100.00") // past due: ISSUED
	nc.RelatedID = p(docFT)
	anon := doc(docAnon, coA, "FS", 2, "paid", tsp("2026-03-02T12:00:00Z"), nil, "250.50")
	anon.CustomerID, anon.CustomerName, anon.CustomerNIF = nil, "Consumidor final", p("999999999")
	docs := []g.Document{
		ft,
		doc(docOverdue, coA, "FT", 138, "issued", tsp("2026-02-20T10:00:00Z"), p("2026-03-09"), "200.00"),
		doc(docDueNow, coA, "FT", 139, "issued", tsp("2026-02-21T10:00:00Z"), p("2026-03-10"), "300.00"),
		big,
		doc(docFS, coA, "FS", 1, "cancelled", tsp("2026-02-10T10:00:00Z"), nil, "50.00"),
		nc,
		doc(docND, coA, "ND", 1, "issued", tsp("2026-01-15T10:00:00Z"), p("2026-02-01"), "75.00"),
		doc(docPFDraft, coA, "PF", 1, "draft", nil, nil, "10.00"),
		doc(docFTDraft, coA, "FT", 140, "draft", nil, p("2026-04-01"), "20.00"),
		doc(docPF, coA, "PF", 2, "issued", tsp("2026-03-03T10:00:00Z"), p("2026-03-01"), "30.00"),
		anon,
		doc(docMidn, coA, "FT", 141, "issued", tsp("2026-02-28T23:00:00Z"), p("2026-12-31"), "40.00"),
		doc(docBefore, coA, "FT", 142, "issued", tsp("2026-02-28T22:59:59.999999Z"), p("2026-12-31"), "41.00"),
		doc(docTieLow, coA, "FR", 2, "paid", tsp("2026-01-10T10:00:00Z"), nil, "60.00"),
		doc(docTieHigh, coA, "FR", 3, "paid", tsp("2026-01-10T10:00:00Z"), nil, "61.00"),
		doc(docPaidOld, coA, "FT", 143, "paid", tsp("2025-12-01T10:00:00Z"), p("2025-12-31"), "80.00"),
		doc(docFRLate, coA, "FR", 4, "issued", tsp("2026-02-05T10:00:00Z"), p("2026-02-06"), "90.00"),
		doc(docFSLate, coA, "FS", 3, "issued", tsp("2026-02-06T10:00:00Z"), p("2026-02-07"), "91.00"),
		doc(docB, coB, "FT", 1, "issued", tsp("2026-03-01T10:00:00Z"), nil, "999.00"),
	}
	docs[len(docs)-1].CustomerID = p(cliB)
	return docs
}

// liveSubmissions are company A's submissions to AGT.
func liveSubmissions() []g.Submission {
	errs := `[{"idError": "E11", "descriptionError": "NIF do adquirente inválido"}, {"idError": "E20", "descriptionError": "Data de emissão fora do período"}]`
	return []g.Submission{
		// docFT: rejected, corrected, then valid: the newest counts.
		{ID: "31000000-0000-4000-8000-000000000001", CompanyID: coA, RequestID: p("REQ-1"), SubmittedAt: ts("2026-03-01T10:00:00Z"),
			CheckedAt: tsp("2026-03-01T11:00:00Z"), ResultCode: g.Ptr[int16](0),
			Documents: []g.SubmissionDocument{{DocumentID: docFT, Status: p("I"), Errors: p(errs)}, {DocumentID: docDueNow, Status: p("I"), Errors: p(errs)}}},
		{ID: "31000000-0000-4000-8000-000000000002", CompanyID: coA, RequestID: p("REQ-2"), SubmittedAt: ts("2026-03-02T10:00:00.5Z"),
			CheckedAt: tsp("2026-03-02T11:00:00.25Z"), ResultCode: g.Ptr[int16](0),
			Documents: []g.SubmissionDocument{{DocumentID: docFT, Status: p("V")}}},
		// docOverdue: sent, not accepted or checked yet.
		{ID: "31000000-0000-4000-8000-000000000003", CompanyID: coA, SubmittedAt: ts("2026-03-03T10:00:00Z"),
			Documents: []g.SubmissionDocument{{DocumentID: docOverdue}}},
		// docBig: two submissions at the same instant; the higher id wins.
		{ID: "31000000-0000-4000-8000-000000000005", CompanyID: coA, RequestID: p("REQ-5"), SubmittedAt: ts("2026-03-04T10:00:00Z"),
			CheckedAt: tsp("2026-03-04T12:00:00Z"), Documents: []g.SubmissionDocument{{DocumentID: docBig, Status: p("V")}}},
		{ID: "31000000-0000-4000-8000-000000000004", CompanyID: coA, RequestID: p("REQ-4"), SubmittedAt: ts("2026-03-04T10:00:00Z"),
			CheckedAt: tsp("2026-03-04T12:00:00Z"), Documents: []g.SubmissionDocument{{DocumentID: docBig, Status: p("I"), Errors: p(`[]`)}}},
		// A PF row exists, yet a PF is never transmitted.
		{ID: "31000000-0000-4000-8000-000000000006", CompanyID: coA, RequestID: p("REQ-6"), SubmittedAt: ts("2026-03-04T10:00:00Z"),
			Documents: []g.SubmissionDocument{{DocumentID: docPF, Status: p("V")}}},
	}
}

// sandboxFixtures share the companies' ids but none of the live rows.
func sandboxFixtures() *g.Dataset {
	sd := doc(docSandbox, coA, "FT", 1, "issued", tsp("2026-03-01T10:00:00Z"), nil, "1.00")
	sd.CustomerID = p(cliSandbox)
	return &g.Dataset{
		Companies: []g.Company{
			{ID: coA, LegalName: "Empresa A Lda", NIF: "5000000001", Status: "active", CreatedAt: ts("2025-01-01T00:00:00Z")},
			{ID: coW, LegalName: "Empresa W Lda", NIF: "5000000004", Status: "active", CreatedAt: ts("2025-01-01T00:00:00Z")},
		},
		Customers: []g.Customer{customer(cliSandbox, coA, "Cliente de Teste", p("5417001234"), nil, nil, "2026-02-01T00:00:00Z")},
		Documents: []g.Document{sd},
	}
}

// The pagination company: 205 documents (5 drafts, issue times in groups of
// three equal instants) and 31 clients (creation times in pairs).
const pagDocs, pagClients = 205, 31

func pagID(kind, i int) string { return fmt.Sprintf("%02x000000-0000-4000-8000-%012x", kind, i) }

func pagDocuments() []g.Document {
	var out []g.Document
	for i := 0; i < pagDocs; i++ {
		var issued *time.Time
		state := "paid"
		if i >= 5 {
			t := ts("2026-01-01T00:00:00Z").Add(time.Duration(i/3) * time.Hour)
			issued = &t
		} else {
			state = "draft"
		}
		// ids out of time order, so the tie-break by id really matters
		d := doc(pagID(0x40, (i*7919)%1000+1), coP, "FT", i+1, state, issued, nil, "1.00")
		d.UpdatedAt = ts("2026-02-01T00:00:00Z").Add(time.Duration(i%17) * time.Minute) // ties in groups
		out = append(out, d)
	}
	return out
}

func pagCustomers() []g.Customer {
	var out []g.Customer
	for i := 0; i < pagClients; i++ {
		created := ts("2026-01-01T00:00:00Z").Add(time.Duration(i/2) * time.Minute).Format(time.RFC3339Nano)
		c := customer(pagID(0x41, (i*7919)%1000+1), coP, fmt.Sprintf("Cliente %02d", i), nil, nil, nil, created)
		c.UpdatedAt = ts("2026-02-01T00:00:00Z").Add(time.Duration(i%5) * time.Hour)
		out = append(out, c)
	}
	return out
}

// expectedDocOrder is the API's order of the pagination company's documents,
// computed independently of the SQL: drafts first, then newest, then id desc.
func expectedDocOrder() []string {
	docs := pagDocuments()
	sort.Slice(docs, func(i, j int) bool {
		a, b := docs[i], docs[j]
		if (a.IssuedAt == nil) != (b.IssuedAt == nil) {
			return a.IssuedAt == nil
		}
		if a.IssuedAt != nil && !a.IssuedAt.Equal(*b.IssuedAt) {
			return a.IssuedAt.After(*b.IssuedAt)
		}
		return a.ID > b.ID
	})
	ids := make([]string, len(docs))
	for i := range docs {
		ids[i] = docs[i].ID
	}
	return ids
}

func expectedClientOrder() []string {
	cs := pagCustomers()
	sort.Slice(cs, func(i, j int) bool {
		if !cs[i].CreatedAt.Equal(cs[j].CreatedAt) {
			return cs[i].CreatedAt.After(cs[j].CreatedAt)
		}
		return cs[i].ID > cs[j].ID
	})
	ids := make([]string, len(cs))
	for i := range cs {
		ids[i] = cs[i].ID
	}
	return ids
}
