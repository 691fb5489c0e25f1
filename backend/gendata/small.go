package gendata

import (
	"context"
	"fmt"
	"time"

	"github.com/invoicing-ao/gateway/backend"
)

// The demo's companies: the same ids in the live and the sandbox database.
const (
	DemoCompanyA         = "0a5e7c1e-0000-4000-8000-00000000000a"
	DemoCompanyB         = "0a5e7c1e-0000-4000-8000-00000000000b"
	DemoCompanySuspended = "0a5e7c1e-0000-4000-8000-00000000000c"
)

// Summary says what LoadSmall wrote, with a few ids to try.
type Summary struct {
	Companies []Company // the same ids in both databases (the live rows)
	Live      Counts
	Sandbox   Counts
}

// Counts of one database, and some of DemoCompanyA's ids in it.
type Counts struct {
	Customers, Documents, Submissions int
	ClientIDs, InvoiceIDs             []string // the first few of DemoCompanyA
}

type smallCompany struct {
	id, name, nif, status string
	customers, documents  int
}

// SetUpSmall applies the platform schema to the live and the sandbox database
// (both new) and loads LoadSmall's data into them: where `gateway demo` and the
// tests start from.
func SetUpSmall(ctx context.Context, liveURL, sandboxURL string, seed int64) (Summary, error) {
	for _, u := range []string{liveURL, sandboxURL} {
		if err := backend.ApplySchema(ctx, u); err != nil {
			return Summary{}, fmt.Errorf("gendata: schema: %w", err)
		}
	}
	return LoadSmall(ctx, liveURL, sandboxURL, seed)
}

// LoadSmall writes the demo data into the live and the sandbox database (both
// already holding the schema): three companies (A and B active, one
// suspended), clients of both kinds and without kind in every phone form,
// documents of all six types in every state, overdue ones, drafts, and AGT
// submissions valid, invalid with errors, pending and resent. The sandbox gets
// different, smaller data with " (teste)" in its names. The same seed gives
// the same rows.
func LoadSmall(ctx context.Context, liveURL, sandboxURL string, seed int64) (Summary, error) {
	live := smallDataset(gen{seed: uint64(seed)}, 1)
	sum := Summary{Companies: live.Companies}
	if err := Write(ctx, liveURL, live); err != nil {
		return sum, fmt.Errorf("gendata: live: %w", err)
	}
	sandbox := smallDataset(gen{seed: uint64(seed) ^ 0x5a5a_5a5a_5a5a_5a5a, label: " (teste)"}, 3)
	if err := Write(ctx, sandboxURL, sandbox); err != nil {
		return sum, fmt.Errorf("gendata: sandbox: %w", err)
	}
	sum.Live, sum.Sandbox = counts(live), counts(sandbox)
	return sum, nil
}

func smallDataset(g gen, shrink int) *Dataset {
	companies := []smallCompany{
		{DemoCompanyA, "Kianda Comércio e Serviços Lda", "5417000010", "active", 60, 150},
		{DemoCompanyB, "Muxima Tecnologia SA", "5417000020", "active", 20, 40},
		{DemoCompanySuspended, "Palanca Transportes Lda", "5417000030", "suspended", 8, 24},
	}
	start := time.Date(2025, 7, 1, 8, 0, 0, 0, time.UTC)
	d := &Dataset{}
	for co, c := range companies {
		d.Companies = append(d.Companies, Company{ID: c.id, LegalName: c.name, NIF: c.nif, Status: c.status, CreatedAt: start.AddDate(0, -6, 0)})
		nCust, nDocs := c.customers/shrink, max(24, c.documents/shrink)
		for i := 0; i < nCust; i++ {
			cust := g.customerAt(c.id, co, i, start.Add(time.Duration(i)*37*time.Hour+time.Duration(i)*1234567*time.Microsecond))
			if i%17 == 16 {
				deleted := cust.CreatedAt.Add(48 * time.Hour)
				cust.DeletedAt = &deleted
			}
			d.Customers = append(d.Customers, cust)
		}
		seqs := map[string]int{}
		plan := docPlan{coID: c.id, co: co, customers: nCust, start: start, span: 300 * 24 * time.Hour}
		first := len(d.Documents)
		for i := 0; i < nDocs; i++ {
			d.Documents = append(d.Documents, g.documentAt(plan, i, seqs))
		}
		d.Submissions = append(d.Submissions, g.submissionsFor(c.id, co, d.Documents[first:], 0)...)
	}
	return d
}

func counts(d *Dataset) Counts {
	c := Counts{Customers: len(d.Customers), Documents: len(d.Documents), Submissions: len(d.Submissions)}
	for _, cu := range d.Customers {
		if cu.CompanyID == DemoCompanyA && cu.DeletedAt == nil && len(c.ClientIDs) < 3 {
			c.ClientIDs = append(c.ClientIDs, cu.ID)
		}
	}
	for _, doc := range d.Documents {
		if doc.CompanyID == DemoCompanyA && len(c.InvoiceIDs) < 3 {
			c.InvoiceIDs = append(c.InvoiceIDs, doc.ID)
		}
	}
	return c
}
