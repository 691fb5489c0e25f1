package backend_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/backend"
	g "github.com/invoicing-ao/gateway/backend/gendata"
	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
)

// newDB makes an empty database holding the platform schema and returns its URL.
type newDB func(t testing.TB) string

func postgresDB(withIndexes bool) newDB {
	return func(t testing.TB) string {
		url := testenv.Postgres(t)
		apply := backend.ApplySchemaWithoutIndexes
		if withIndexes {
			apply = backend.ApplySchema
		}
		if err := apply(context.Background(), url); err != nil {
			t.Fatal(err)
		}
		return url
	}
}

func sqliteDB(t testing.TB) string {
	url := "sqlite:" + filepath.Join(t.TempDir(), "platform.db")
	if err := backend.ApplySchema(context.Background(), url); err != nil {
		t.Fatal(err)
	}
	return url
}

func TestConformance(t *testing.T) {
	t.Parallel()
	t.Run("postgres", func(t *testing.T) { t.Parallel(); runConformance(t, postgresDB(false)) })
	t.Run("postgres+indexes", func(t *testing.T) { t.Parallel(); runConformance(t, postgresDB(true)) })
	t.Run("sqlite", func(t *testing.T) { t.Parallel(); runConformance(t, sqliteDB) })
}

func openStore(t *testing.T, url string, now time.Time) *backend.Store {
	t.Helper()
	s, err := backend.Open(context.Background(), backend.Config{URL: url, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

func load(t testing.TB, url string, d *g.Dataset) {
	t.Helper()
	if err := g.Write(context.Background(), url, d); err != nil {
		t.Fatalf("load fixtures: %v", err)
	}
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// runConformance is the one suite both engines must pass. It fills a live and
// a sandbox database with the fixtures, then checks every rule of the adapter.
func runConformance(t *testing.T, mk newDB) {
	liveURL, sandboxURL := mk(t), mk(t)
	load(t, liveURL, liveFixtures())
	load(t, sandboxURL, sandboxFixtures())
	live := openStore(t, liveURL, fixedNow)
	sandbox := openStore(t, sandboxURL, fixedNow)
	ctx := context.Background()

	t.Run("company", func(t *testing.T) { testCompany(t, live) })
	t.Run("company search", func(t *testing.T) { testCompanySearch(t, live) })
	t.Run("get client", func(t *testing.T) { testGetClient(t, live) })
	t.Run("list clients", func(t *testing.T) { testListClients(t, live) })
	t.Run("client search", func(t *testing.T) {
		// Both ways of reading a search's page: from its matches (few of
		// them, the default here) and walked in the list's order (a bound
		// of 1 sends every search with a match that way).
		testClientSearch(t, live)
		walked, err := backend.Open(ctx, backend.Config{URL: liveURL, Now: func() time.Time { return fixedNow }, SearchExactBelow: 1})
		if err != nil {
			t.Fatal(err)
		}
		defer walked.Close()
		testClientSearch(t, walked)
	})
	t.Run("get invoice", func(t *testing.T) { testGetInvoice(t, live) })
	t.Run("transmission", func(t *testing.T) { testTransmission(t, live) })
	t.Run("invoice filters", func(t *testing.T) { testInvoiceFilters(t, live) })
	t.Run("overdue at Luanda midnight", func(t *testing.T) { testOverdueClock(t, liveURL) })
	t.Run("list items equal get", func(t *testing.T) { testListItems(t, live) })
	t.Run("pagination", func(t *testing.T) { testPagination(t, live) })
	t.Run("cursors", func(t *testing.T) { testCursors(t, live) })
	t.Run("changes since", func(t *testing.T) { testChanges(t, live) })
	t.Run("invalid arguments", func(t *testing.T) { testInvalid(t, live) })
	t.Run("changes for events", func(t *testing.T) { testEventChanges(t, live) })
	t.Run("changes of every company", func(t *testing.T) { testAllCompaniesChanges(t, live) })
	t.Run("tenancy", func(t *testing.T) { testTenancy(t, live) })
	t.Run("modes", func(t *testing.T) { testModes(t, live, sandbox) })
	t.Run("create client", func(t *testing.T) { testCreateClient(t, live) })
	t.Run("create races", func(t *testing.T) { testCreateRace(t, live) })
	t.Run("create with an id", func(t *testing.T) { testCreateWithID(t, live) })
	t.Run("cursor walk while inserting", func(t *testing.T) { testCursorWhileInserting(t, liveURL) })
	t.Run("unavailable after close", func(t *testing.T) {
		s := openStore(t, liveURL, fixedNow)
		s.Close()
		if _, err := s.GetClient(ctx, coA, cliCompany); !errors.Is(err, backend.ErrUnavailable) {
			t.Fatalf("GetClient after Close: %v, want ErrUnavailable", err)
		}
	})
	t.Run("cancelled context", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		_, err := live.ListInvoices(cctx, coA, invoicing.InvoiceFilter{Page: 1, PageSize: 20})
		if !errors.Is(err, backend.ErrUnavailable) || !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled: %v, want ErrUnavailable wrapping context.Canceled", err)
		}
	})
}

func testCompany(t *testing.T, s *backend.Store) {
	ctx := context.Background()
	c, err := s.Company(ctx, coA)
	if err != nil || c != (invoicing.Company{ID: coA, Name: "Empresa A Lda", NIF: "5000000001", Status: "active"}) {
		t.Fatalf("Company(A) = %+v, %v", c, err)
	}
	upper := "A0000000-0000-4000-8000-00000000000A"
	if c, err := s.Company(ctx, upper); err != nil || c.ID != coA {
		t.Fatalf("Company(upper-case id) = %+v, %v", c, err)
	}
	if c, err := s.Company(ctx, coSusp); err != nil || c.Status != "suspended" {
		t.Fatalf("Company(suspended) = %+v, %v", c, err)
	}
	for _, id := range []string{"f0000000-0000-4000-8000-000000000000", "not-a-uuid", "", "a0000000-0000-4000-8000-00000000000a'--"} {
		if _, err := s.Company(ctx, id); !errors.Is(err, backend.ErrNotFound) {
			t.Errorf("Company(%q): %v, want ErrNotFound", id, err)
		}
	}
}

func testGetClient(t *testing.T, s *backend.Store) {
	ctx := context.Background()
	c, err := s.GetClient(ctx, coA, cliCompany)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":"11000000-0000-4000-8000-000000000001","name":"Sonangol Distribuição SA","nif":"5417001234",` +
		`"email":"geral@sonangol.example","phone":"+244923456789","address":"Rua Rainha Ginga 29, Luanda",` +
		`"type":"COMPANY","createdAt":"2026-01-05T10:00:00.120Z","updatedAt":"2026-01-05T10:00:00.120Z"}`
	if got := jsonOf(t, c); got != want {
		t.Fatalf("client JSON\n got %s\nwant %s", got, want)
	}
	// Each mapping rule: phone forms, kind, NIF as stored, createdAt format.
	cases := []struct {
		id, phone, typ, nif, created string
	}{
		{cliIndiv, `"+244923456780"`, `"INDIVIDUAL"`, `"000238553ca017"`, `"2026-01-06T08:30:15.500Z"`},
		{cliNullKind, `"+244923456781"`, `null`, `null`, `"2026-01-07T00:00:00.000Z"`},
		{cliSpaced, `"+244923456782"`, `"COMPANY"`, `"541 700 9999"`, `"2026-01-08T00:00:00.000Z"`},
		{cliForeign, `"+351912345678"`, `"COMPANY"`, `"PT123456"`, `"2026-01-09T00:00:00.000Z"`},
		{cliOdd, `"12345"`, `"INDIVIDUAL"`, `null`, `"2026-01-10T00:00:00.000Z"`},
		{cliTieLow, `null`, `null`, `null`, `"2026-01-11T00:00:00.000Z"`},
	}
	for _, tc := range cases {
		c, err := s.GetClient(ctx, coA, tc.id)
		if err != nil {
			t.Fatalf("GetClient(%s): %v", tc.id, err)
		}
		got := []string{jsonOf(t, c.Phone), jsonOf(t, c.Type), jsonOf(t, c.NIF), jsonOf(t, c.CreatedAt)}
		want := []string{tc.phone, tc.typ, tc.nif, tc.created}
		if !slices.Equal(got, want) {
			t.Errorf("GetClient(%s) phone/type/nif/createdAt = %v, want %v", tc.id, got, want)
		}
	}
	for _, id := range []string{cliDeleted, cliB, "11000000-0000-4000-8000-0000000000ff", "nope", cliCompany + "x"} {
		if _, err := s.GetClient(ctx, coA, id); !errors.Is(err, backend.ErrNotFound) {
			t.Errorf("GetClient(A, %s): %v, want ErrNotFound", id, err)
		}
	}
}

func clientIDs(p invoicing.Page[invoicing.Client]) []string {
	ids := make([]string, len(p.Data))
	for i, c := range p.Data {
		ids[i] = c.ID
	}
	return ids
}

func testListClients(t *testing.T, s *backend.Store) {
	p, err := s.ListClients(context.Background(), coA, invoicing.ClientFilter{Page: 1, PageSize: 20})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{cliTieHigh, cliTieLow, cliOdd, cliForeign, cliSpaced, cliNullKind, cliIndiv, cliCompany}
	if got := clientIDs(p); !slices.Equal(got, want) || p.Total != 8 || p.Page != 1 || p.PageSize != 20 {
		t.Fatalf("clients = %v total %d, want %v total 8", got, p.Total, want)
	}
	// The list maps exactly as get does.
	one, _ := s.GetClient(context.Background(), coA, cliCompany)
	if jsonOf(t, p.Data[7]) != jsonOf(t, one) {
		t.Fatalf("list entry %s != get %s", jsonOf(t, p.Data[7]), jsonOf(t, one))
	}
}

func testClientSearch(t *testing.T, s *backend.Store) {
	cases := []struct {
		search string
		want   []string
	}{
		{"sonangol", []string{cliCompany}},
		{"SONANGOL DISTRIBUIÇÃO", []string{cliCompany}},
		{"joão", []string{cliIndiv}},
		{"évora", []string{cliForeign}}, // non-ASCII upper case stored
		{"JOÃO", []string{cliIndiv}},
		{"000238553CA017", []string{cliIndiv}},      // stored lower case
		{"000 238 553 ca", []string{cliIndiv}},      // spaces and case ignored
		{"5417009999", []string{cliSpaced}},         // stored with spaces
		{"541700", []string{cliSpaced, cliCompany}}, // substring of both; deleted 5417005555 hidden
		{"%", []string{cliNullKind}},                // wildcards are literal
		{"_", []string{cliNullKind}},
		{`\`, nil},
		{"100% s", []string{cliNullKind}},
		{"apagado", nil}, // deleted customer
		{"'; DROP TABLE customers; --", nil},
		{"tie", []string{cliTieHigh, cliTieLow}},
	}
	for _, tc := range cases {
		p, err := s.ListClients(context.Background(), coA, invoicing.ClientFilter{Search: tc.search, Page: 1, PageSize: 100})
		if err != nil {
			t.Fatalf("search %q: %v", tc.search, err)
		}
		if got := clientIDs(p); !slices.Equal(got, tc.want) || p.Total != int64(len(tc.want)) {
			t.Errorf("search %q = %v (total %d), want %v", tc.search, got, p.Total, tc.want)
		}
	}
	// Page by page, by number and by cursor, a search gives its matches in
	// the list's order, each once.
	for _, search := range []string{"541700", "tie", "a"} {
		all, err := s.ListClients(context.Background(), coA, invoicing.ClientFilter{Search: search, Page: 1, PageSize: 100})
		if err != nil {
			t.Fatal(err)
		}
		want := clientIDs(all)
		var byPage, byCursor []string
		var after *invoicing.Position
		for page := 1; page <= len(want)+1; page++ {
			p, err := s.ListClients(context.Background(), coA, invoicing.ClientFilter{Search: search, Page: page, PageSize: 1})
			if err != nil || p.Total != int64(len(want)) {
				t.Fatalf("search %q page %d: total %d, %v; want %d", search, page, p.Total, err, len(want))
			}
			byPage = append(byPage, clientIDs(p)...)
			c, err := s.ListClients(context.Background(), coA, invoicing.ClientFilter{Search: search, Page: 1, PageSize: 1, After: after})
			if err != nil {
				t.Fatalf("search %q after %v: %v", search, after, err)
			}
			byCursor = append(byCursor, clientIDs(c)...)
			if after = c.Next; after == nil {
				break
			}
		}
		if len(want) < 2 || !slices.Equal(byPage, want) || !slices.Equal(byCursor, want) {
			t.Errorf("search %q by pages of 1: %v by number, %v by cursor; want %v (two or more)", search, byPage, byCursor, want)
		}
		past, err := s.ListClients(context.Background(), coA, invoicing.ClientFilter{Search: search, Page: len(want) + 1, PageSize: 1})
		if err != nil || len(past.Data) != 0 || past.Total != int64(len(want)) || past.Next != nil {
			t.Errorf("search %q, the page past the end: %+v, %v", search, past, err)
		}
	}
	// The table survived the injection attempt.
	if _, err := s.GetClient(context.Background(), coA, cliCompany); err != nil {
		t.Fatal(err)
	}
}

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

func testCreateClient(t *testing.T, s *backend.Store) {
	ctx := context.Background()
	c, err := s.CreateClient(ctx, coW, invoicing.NewClient{
		Name: "Nova Empresa", NIF: g.Ptr(" 5417 00 77ab "), Email: g.Ptr("a@b.example"),
		Phone: g.Ptr("923 456 789"), Address: g.Ptr("Av. 4 de Fevereiro"), Type: g.Ptr("COMPANY"),
	})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":"` + c.ID + `","name":"Nova Empresa","nif":"54170077AB","email":"a@b.example",` +
		`"phone":"+244923456789","address":"Av. 4 de Fevereiro","type":"COMPANY","createdAt":"2026-03-10T12:00:00.000Z",` +
		`"updatedAt":"2026-03-10T12:00:00.000Z"}`
	if got := jsonOf(t, c); got != want {
		t.Fatalf("created\n got %s\nwant %s", got, want)
	}
	got, err := s.GetClient(ctx, coW, c.ID)
	if err != nil || jsonOf(t, got) != jsonOf(t, c) {
		t.Fatalf("get after create: %s, %v; want %s", jsonOf(t, got), err, jsonOf(t, c))
	}

	minimal, err := s.CreateClient(ctx, coW, invoicing.NewClient{Name: "Só Nome"})
	if err != nil || minimal.NIF != nil || minimal.Type != nil || minimal.Phone != nil {
		t.Fatalf("minimal create: %s, %v", jsonOf(t, minimal), err)
	}
	if _, err := s.CreateClient(ctx, coW, invoicing.NewClient{Name: "Outro Sem NIF"}); err != nil {
		t.Fatalf("two clients without NIF: %v", err)
	}
	indiv, err := s.CreateClient(ctx, coW, invoicing.NewClient{Name: "Pessoa", Type: g.Ptr("INDIVIDUAL"), Phone: g.Ptr("+351 912")})
	if err != nil || jsonOf(t, indiv.Type) != `"INDIVIDUAL"` || *indiv.Phone != "+351 912" {
		t.Fatalf("individual: %s, %v", jsonOf(t, indiv), err)
	}

	// A conflict names the company's client that has the NIF.
	conflicts := []struct {
		name, nif string
		want      error
		holder    string
	}{
		{"same NIF again", "54170077ab", backend.ErrNIFConflict, c.ID},
		{"same NIF, spaces and case", "5417 0077 AB", backend.ErrNIFConflict, c.ID},
		{"existing NIF typed with spaces", "5999000001", backend.ErrNIFConflict, cliWTyped},
		{"deleted customer's NIF is free", "5999000002", nil, ""},
		{"another company's NIF is fine", "5417001234", nil, ""},
	}
	for _, tc := range conflicts {
		_, err := s.CreateClient(ctx, coW, invoicing.NewClient{Name: tc.name, NIF: g.Ptr(tc.nif)})
		if !errors.Is(err, tc.want) && !(tc.want == nil && err == nil) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
		var taken *backend.NIFConflictError
		if tc.holder != "" && (!errors.As(err, &taken) || taken.ClientID != tc.holder) {
			t.Errorf("%s: %v, want a NIFConflictError naming %s", tc.name, err, tc.holder)
		}
	}
	// Now both this company and another have 5417001234: the conflict names
	// this company's client, never the other's (cliCompany, of coA).
	p, err := s.ListClients(ctx, coW, invoicing.ClientFilter{Search: "5417001234", Page: 1, PageSize: 10})
	if err != nil || len(p.Data) != 1 {
		t.Fatalf("coW's client with 5417001234: %v, %v", p.Data, err)
	}
	_, err = s.CreateClient(ctx, coW, invoicing.NewClient{Name: "Again", NIF: g.Ptr("5417001234")})
	if taken := (*backend.NIFConflictError)(nil); !errors.As(err, &taken) || taken.ClientID != p.Data[0].ID {
		t.Errorf("a NIF two companies have: %v, want a NIFConflictError naming %s (not %s)", err, p.Data[0].ID, cliCompany)
	}
	invalid := []struct {
		co   string
		c    invoicing.NewClient
		want error
	}{
		{coW, invoicing.NewClient{Name: ""}, backend.ErrInvalid},
		{coW, invoicing.NewClient{Name: "X", Type: g.Ptr("PERSON")}, backend.ErrInvalid},
		{"f0000000-0000-4000-8000-000000000000", invoicing.NewClient{Name: "X"}, backend.ErrNotFound},
		{"not-a-uuid", invoicing.NewClient{Name: "X"}, backend.ErrNotFound},
	}
	for _, tc := range invalid {
		if _, err := s.CreateClient(ctx, tc.co, tc.c); !errors.Is(err, tc.want) {
			t.Errorf("create %+v in %s: %v, want %v", tc.c, tc.co, err, tc.want)
		}
	}
}

func testCreateRace(t *testing.T, s *backend.Store) {
	const n = 20
	var wg sync.WaitGroup
	errs := make([]error, n)
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, errs[i] = s.CreateClient(context.Background(), coW, invoicing.NewClient{Name: "Corrida", NIF: g.Ptr("5888000000")})
		}()
	}
	close(start)
	wg.Wait()
	ok, conflict := 0, 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case errors.Is(err, backend.ErrNIFConflict):
			conflict++
		default:
			t.Errorf("unexpected error: %v", err)
		}
	}
	if ok != 1 || conflict != n-1 {
		t.Fatalf("%d created, %d conflicts; want 1 and %d", ok, conflict, n-1)
	}
	p, err := s.ListClients(context.Background(), coW, invoicing.ClientFilter{Search: "5888000000", Page: 1, PageSize: 100})
	if err != nil || p.Total != 1 {
		t.Fatalf("rows with the raced NIF: %d, %v", p.Total, err)
	}
}

// testCreateWithID: a create given an id makes the row once; every further
// create with that id (with or without a NIF, concurrent or not) meets it
// as a ClientExistsError holding the client, and never makes a second row.
func testCreateWithID(t *testing.T, s *backend.Store) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		nif  *string
	}{{"with NIF", g.Ptr("5999888777")}, {"without NIF", nil}} {
		t.Run(tc.name, func(t *testing.T) {
			id := uuidFor(tc.name)
			nc := invoicing.NewClient{ID: id, Name: "Idempotente " + tc.name, NIF: tc.nif}
			const n = 10
			var wg sync.WaitGroup
			results := make([]invoicing.Client, n)
			errs := make([]error, n)
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					results[i], errs[i] = s.CreateClient(ctx, coW, nc)
				}()
			}
			wg.Wait()
			created, existing := 0, 0
			for i, err := range errs {
				var ex *backend.ClientExistsError
				switch {
				case err == nil:
					created++
					if results[i].ID != id {
						t.Errorf("created id %s, want %s", results[i].ID, id)
					}
				case errors.As(err, &ex) && errors.Is(err, backend.ErrClientExists):
					existing++
					if ex.Client.ID != id || ex.Client.Name != nc.Name {
						t.Errorf("existing client %+v, want id %s", ex.Client, id)
					}
				default:
					t.Errorf("unexpected error: %v", err)
				}
			}
			if created != 1 || existing != n-1 {
				t.Fatalf("%d created, %d met the existing row; want 1 and %d", created, existing, n-1)
			}
			got, err := s.GetClient(ctx, coW, id)
			if err != nil || got.Name != nc.Name {
				t.Fatalf("GetClient(%s) = %+v, %v", id, got, err)
			}
			p, err := s.ListClients(ctx, coW, invoicing.ClientFilter{Search: nc.Name, Page: 1, PageSize: 100})
			if err != nil || p.Total != 1 {
				t.Fatalf("rows named %q: %d, %v; want exactly 1", nc.Name, p.Total, err)
			}
		})
	}
	// Another company's create with the same id is not this client: the
	// gateway derives ids per company, so the id is refused, never shared.
	if _, err := s.CreateClient(ctx, coA, invoicing.NewClient{ID: uuidFor("with NIF"), Name: "Outra"}); err == nil || errors.Is(err, backend.ErrClientExists) {
		t.Errorf("another company's create with a taken id: %v, want a plain error", err)
	}
	if _, err := s.CreateClient(ctx, coW, invoicing.NewClient{ID: "NOT-AN-ID", Name: "X"}); !errors.Is(err, backend.ErrInvalid) {
		t.Errorf("malformed id: %v, want ErrInvalid", err)
	}
}

// uuidFor is a fixed UUID per test case name.
func uuidFor(name string) string {
	h := sha256.Sum256([]byte(name))
	h[6] = h[6]&0x0f | 0x40
	h[8] = h[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
}
