package gendata_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/backend"
	"github.com/invoicing-ao/gateway/backend/gendata"
	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
	"github.com/jackc/pgx/v5"
)

func sqliteURL(t *testing.T, name string) string {
	u := "sqlite:" + filepath.Join(t.TempDir(), name)
	if err := backend.ApplySchema(context.Background(), u); err != nil {
		t.Fatal(err)
	}
	return u
}

func pgURL(t *testing.T) string {
	u := testenv.Postgres(t)
	if err := backend.ApplySchema(context.Background(), u); err != nil {
		t.Fatal(err)
	}
	return u
}

// dump reads everything of DemoCompanyA through the adapter, as JSON.
func dump(t *testing.T, url string) string {
	ctx := context.Background()
	s, err := backend.Open(ctx, backend.Config{URL: url, Now: func() time.Time { return time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC) }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var out []any
	for page := 1; ; page++ {
		p, err := s.ListInvoices(ctx, gendata.DemoCompanyA, invoicing.InvoiceFilter{Page: page, PageSize: 100})
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Data) == 0 {
			break
		}
		for _, inv := range p.Data {
			full, err := s.GetInvoice(ctx, gendata.DemoCompanyA, inv.ID)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, full)
		}
	}
	clients, err := s.ListClients(ctx, gendata.DemoCompanyA, invoicing.ClientFilter{Page: 1, PageSize: 100})
	if err != nil {
		t.Fatal(err)
	}
	out = append(out, clients)
	b, _ := json.Marshal(out)
	return string(b)
}

// TestLoadSmall loads the demo's data on SQLite and PostgreSQL: live and
// sandbox differ, a seed gives the same data on both engines and another
// seed other data, and the data has the variety the demo promises.
func TestLoadSmall(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	live, sandbox := sqliteURL(t, "live.db"), sqliteURL(t, "sandbox.db")
	sum, err := gendata.LoadSmall(ctx, live, sandbox, 7)
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.Companies) != 3 || sum.Live.Documents <= sum.Sandbox.Documents || len(sum.Live.InvoiceIDs) == 0 {
		t.Fatalf("summary: %+v", sum)
	}
	liveDump, sandboxDump := dump(t, live), dump(t, sandbox)
	if liveDump == sandboxDump {
		t.Fatal("live and sandbox hold the same data")
	}
	if !strings.Contains(sandboxDump, "(teste)") || strings.Contains(liveDump, "(teste)") {
		t.Fatal("sandbox names are not marked, or live names are")
	}

	// Reproducible, and identical through both engines.
	pgLive, pgSandbox := pgURL(t), pgURL(t)
	if _, err := gendata.LoadSmall(ctx, pgLive, pgSandbox, 7); err != nil {
		t.Fatal(err)
	}
	if got := dump(t, pgLive); got != liveDump {
		t.Fatalf("seed 7 on PostgreSQL differs from seed 7 on SQLite (%d vs %d bytes)", len(got), len(liveDump))
	}
	other := sqliteURL(t, "other.db")
	if _, err := gendata.LoadSmall(ctx, other, sqliteURL(t, "other-sb.db"), 8); err != nil {
		t.Fatal(err)
	}
	if dump(t, other) == liveDump {
		t.Fatal("seeds 7 and 8 gave the same data")
	}

	// The variety the demo promises.
	var rest []json.RawMessage
	if err := json.Unmarshal([]byte(liveDump), &rest); err != nil {
		t.Fatal(err)
	}
	assertInvoiceVariety(t, rest[:len(rest)-1])
	assertClientVariety(t, rest[len(rest)-1])
	assertPhoneForms(t, live)
}

// assertInvoiceVariety checks a dump's invoices: every type in every
// state, OVERDUE only where it can be, every transmission status, errors
// and an anonymous consumer.
func assertInvoiceVariety(t *testing.T, raws []json.RawMessage) {
	t.Helper()
	var invoices []invoicing.Invoice
	for _, raw := range raws {
		var inv invoicing.Invoice
		if err := json.Unmarshal(raw, &inv); err != nil {
			t.Fatal(err)
		}
		invoices = append(invoices, inv)
	}
	seen := map[string]bool{}
	for _, inv := range invoices {
		seen[inv.Type+" "+inv.Status] = true
		if inv.Status == "OVERDUE" && inv.Type != "FT" && inv.Type != "ND" {
			t.Errorf("%s %s is OVERDUE: only FT and ND can be", inv.Type, inv.Number)
		}
		seen[inv.Status] = true
		seen["tx "+inv.Transmission.Status] = true
		if inv.Transmission.Status == "INVALID" && len(inv.Transmission.Errors) > 0 {
			seen["tx errors"] = true
		}
		if inv.Customer.ID == nil {
			seen["anonymous"] = true
		}
	}
	for _, typ := range []string{"FT", "FR", "FS", "NC", "ND", "PF"} {
		for _, st := range []string{"DRAFT", "PAID", "CANCELLED"} {
			if !seen[typ+" "+st] {
				t.Errorf("no %s %s", typ, st)
			}
		}
		if !seen[typ+" ISSUED"] && !seen[typ+" OVERDUE"] {
			t.Errorf("no issued %s", typ)
		}
	}
	for _, want := range []string{"OVERDUE", "ISSUED", "tx VALID", "tx INVALID", "tx errors", "tx PENDING", "tx NOT_SENT", "tx NOT_APPLICABLE", "anonymous"} {
		if !seen[want] {
			t.Errorf("no %s", want)
		}
	}
}

// assertClientVariety checks a dump's page of clients: companies,
// individuals, clients of no type, and a foreign phone.
func assertClientVariety(t *testing.T, raw json.RawMessage) {
	t.Helper()
	var clients invoicing.Page[invoicing.Client]
	if err := json.Unmarshal(raw, &clients); err != nil {
		t.Fatal(err)
	}
	kinds := map[string]bool{}
	for _, c := range clients.Data {
		k := "null"
		if c.Type != nil {
			k = *c.Type
		}
		kinds[k] = true
		if c.Phone != nil && !strings.HasPrefix(*c.Phone, "+244") {
			kinds["foreign phone"] = true
		}
	}
	for _, want := range []string{"COMPANY", "INDIVIDUAL", "null", "foreign phone"} {
		if !kinds[want] {
			t.Errorf("no client with %s", want)
		}
	}
}

// assertPhoneForms checks the stored phones use every form of the platform.
func assertPhoneForms(t *testing.T, url string) {
	t.Helper()
	pg := pgURL(t)
	if _, err := gendata.LoadSmall(context.Background(), pg, pgURL(t), 7); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(context.Background(), pg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	forms := map[string]string{
		"+244 and 9 digits": `^\+244[0-9]{9}$`,
		"9 digits":          `^[0-9]{9}$`,
		"with spaces":       `^[0-9]{3} [0-9]{3} [0-9]{3}$`,
		"+244 with spaces":  `^\+244 [0-9]{3} [0-9]{3} [0-9]{3}$`,
	}
	for name, re := range forms {
		var n int
		if err := conn.QueryRow(context.Background(), "SELECT count(*) FROM customers WHERE phone ~ $1", re).Scan(&n); err != nil || n == 0 {
			t.Errorf("no phone %s (%v)", name, err)
		}
	}
	var deleted int
	if err := conn.QueryRow(context.Background(), "SELECT count(*) FROM customers WHERE deleted_at IS NOT NULL").Scan(&deleted); err != nil || deleted == 0 {
		t.Errorf("no deleted customers (%v)", err)
	}
	var resent int
	err = conn.QueryRow(context.Background(), "SELECT count(*) FROM (SELECT document_id FROM agt_submission_documents GROUP BY 1 HAVING count(*) > 1) x").Scan(&resent)
	if err != nil || resent == 0 {
		t.Errorf("no resubmissions (%v)", err)
	}
	_ = url
}

func TestLoadLargeScaledDown(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgURL(t)
	spec := gendata.LargeSpec{BigDocuments: 3000, BigCustomers: 400, SmallCompanies: 3}
	var progress strings.Builder
	if err := gendata.LoadLarge(ctx, url, 1, spec, &progress); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(progress.String(), "done") {
		t.Errorf("progress: %q", progress.String())
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	checks := []struct {
		q    string
		want int
	}{
		{"SELECT count(*) FROM companies", 1 + spec.SmallCompanies},
		{"SELECT count(*) FROM documents WHERE company_id = '" + gendata.LargeCompany + "'", spec.BigDocuments},
		{"SELECT count(*) FROM customers WHERE company_id = '" + gendata.LargeCompany + "'", spec.BigCustomers},
		{"SELECT count(*) FROM document_lines l JOIN documents d ON d.id = l.document_id WHERE d.company_id = '" + gendata.LargeCompany + "'", 3 * spec.BigDocuments},
		{"SELECT count(*) FROM documents", spec.BigDocuments + 100*spec.SmallCompanies},
		// every document's gross total is its lines plus tax, exactly
		{"SELECT count(*) FROM documents d WHERE net_total <> (SELECT sum(line_total) FROM document_lines WHERE document_id = d.id) OR gross_total <> net_total + tax_total", 0},
	}
	for _, c := range checks {
		var n int
		if err := conn.QueryRow(ctx, c.q).Scan(&n); err != nil || n != c.want {
			t.Errorf("%s = %d, %v; want %d", c.q, n, err, c.want)
		}
	}
	var subs int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM agt_submission_documents").Scan(&subs); err != nil || subs == 0 {
		t.Errorf("no submissions: %d, %v", subs, err)
	}
	if err := gendata.LoadLarge(ctx, "sqlite:x.db", 1, spec, nil); err == nil {
		t.Error("large load into SQLite accepted")
	}
}

// The shapes spread documents as they say: even, about half of the due
// dates past at every age; aging, the newest issued documents not yet due
// and the old ones mostly paid.
func TestLargeShapes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	today := time.Date(2026, 6, 15, 0, 0, 0, 0, time.UTC)
	const big = "company_id = '" + gendata.LargeCompany + "' AND doc_type IN ('FT', 'ND') AND state = 'issued' AND created_at >= '2026-01-01'"
	for _, sh := range []gendata.Shape{gendata.ShapeEven, gendata.ShapeAging} {
		t.Run(string(sh), func(t *testing.T) {
			url := pgURL(t)
			spec := gendata.LargeSpec{BigDocuments: 6000, BigCustomers: 50, Shape: sh, Today: today}
			if err := gendata.LoadLarge(ctx, url, 1, spec, nil); err != nil {
				t.Fatal(err)
			}
			conn, err := pgx.Connect(ctx, url)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(ctx)
			frac := func(q string) (float64, int) {
				t.Helper()
				var part, all int
				if err := conn.QueryRow(ctx, q, today).Scan(&part, &all); err != nil {
					t.Fatal(err)
				}
				return float64(part) / float64(max(all, 1)), all
			}
			var oldest, newest time.Time
			if err := conn.QueryRow(ctx, "SELECT min(created_at), max(created_at) FROM documents WHERE company_id = $1", gendata.LargeCompany).Scan(&oldest, &newest); err != nil {
				t.Fatal(err)
			}
			if newest.After(today) || today.Sub(oldest) < 1000*24*time.Hour {
				t.Errorf("issue dates %s to %s: want the three years up to %s", oldest, newest, today)
			}
			// The past-due share of the year's issued FT and ND, and of the
			// last 30 days'.
			recent, nRecent := frac("SELECT count(*) FILTER (WHERE due_date < $1::date), count(*) FROM documents WHERE " + big + " AND created_at >= $1::date - 30")
			year, nYear := frac("SELECT count(*) FILTER (WHERE due_date < $1::date), count(*) FROM documents WHERE " + big)
			paidOld, _ := frac("SELECT count(*) FILTER (WHERE state = 'paid'), count(*) FROM documents WHERE company_id = '" + gendata.LargeCompany + "' AND created_at < $1::date - 365")
			var before int
			if err := conn.QueryRow(ctx, "SELECT count(*) FROM documents WHERE due_date < created_at::date").Scan(&before); err != nil || before != 0 {
				t.Errorf("%d documents due before their issue (%v)", before, err)
			}
			t.Logf("past due: %.2f of %d this year, %.2f of %d in the last 30 days; paid among older than a year: %.2f", year, nYear, recent, nRecent, paidOld)
			// Names of a long tail: most customers have a word of their
			// own, and documents carry their customer's name.
			var own, wrong int
			if err := conn.QueryRow(ctx, `SELECT count(DISTINCT c.id) FROM customers c, regexp_split_to_table(c.name, ' ') w
				WHERE c.company_id = $1 AND (SELECT count(*) FROM customers o WHERE o.company_id = c.company_id AND o.name LIKE '%' || w || '%') = 1`,
				gendata.LargeCompany).Scan(&own); err != nil || own < spec.BigCustomers*8/10 {
				t.Errorf("%d of %d customers have a word of their own (%v), want most", own, spec.BigCustomers, err)
			}
			if err := conn.QueryRow(ctx, "SELECT count(*) FROM documents d JOIN customers c ON c.id = d.customer_id WHERE d.customer_name <> c.name").Scan(&wrong); err != nil || wrong != 0 {
				t.Errorf("%d documents name their customer otherwise (%v)", wrong, err)
			}
			switch sh {
			case gendata.ShapeEven:
				if year < 0.35 || year > 0.65 || nRecent == 0 || recent < 0.2 || recent > 0.8 {
					t.Errorf("even: %.2f of the year's and %.2f of the last 30 days' issued FT and ND past due, want about half of each", year, recent)
				}
			case gendata.ShapeAging:
				if recent != 0 || nRecent == 0 || year < 0.5 || paidOld < 0.8 {
					t.Errorf("aging: past due %.2f of the last 30 days' (want none), %.2f of the year's (want most); paid %.2f of the older (want most)", recent, year, paidOld)
				}
			}
		})
	}
}
