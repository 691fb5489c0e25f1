package gendata

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// LargeCompany is the id of the large load's big company.
const LargeCompany = "b1600000-0000-4000-8000-000000000001"

// LargeSpec sizes the large load.
type LargeSpec struct {
	BigDocuments   int // documents of LargeCompany, 3 lines each
	BigCustomers   int // customers of LargeCompany
	SmallCompanies int // further companies of smallCustomers / smallDocuments each
	// Shape spreads the documents over states and dates; "" is ShapeMixed.
	Shape Shape
	// Today is the day the shapes that follow the calendar (ShapeEven,
	// ShapeAging) end on and judge due dates by; zero is the load's day.
	Today time.Time
}

// DefaultLargeSpec is the benchmark size: the platform's largest company plus
// a thousand ordinary ones.
var DefaultLargeSpec = LargeSpec{BigDocuments: 1_000_000, BigCustomers: 100_000, SmallCompanies: 1_000}

const (
	smallCustomers = 20
	smallDocuments = 100
	submitEvery    = 10 // one document in this many is sent to AGT
)

// LoadLarge streams the large data set into a PostgreSQL database holding the
// schema, with COPY, reporting progress to progress (may be nil). Documents
// have 3 lines each; one in ten is sent to AGT. It ends with VACUUM ANALYZE so
// that the planner and index-only scans see the new rows. DefaultLargeSpec
// took 2m16s on a 2-core machine with the proposed indexes in place.
func LoadLarge(ctx context.Context, url string, seed int64, spec LargeSpec, progress io.Writer) error {
	if !strings.HasPrefix(url, "postgres://") && !strings.HasPrefix(url, "postgresql://") {
		return errors.New("gendata: the large load needs PostgreSQL")
	}
	if progress == nil {
		progress = io.Discard
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return fmt.Errorf("gendata: connect: %w", err)
	}
	defer conn.Close(ctx)
	g := gen{seed: uint64(seed)}
	if _, err := ParseShape(string(spec.Shape)); err != nil && spec.Shape != "" {
		return err
	}
	today := spec.Today
	if today.IsZero() {
		today = time.Now()
	}
	today = today.UTC().Truncate(24 * time.Hour)
	start, span := spec.Shape.span(today)

	companies := []largeCompany{{LargeCompany, spec.BigCustomers, spec.BigDocuments}}
	for i := 1; i <= spec.SmallCompanies; i++ {
		companies = append(companies, largeCompany{g.rowID(0, i, i), smallCustomers, smallDocuments})
	}
	began := time.Now()
	report := func(format string, args ...any) {
		fmt.Fprintf(progress, "[%s] "+format+"\n", append([]any{time.Since(began).Round(time.Second)}, args...)...)
	}

	err = copyRows(ctx, conn, "companies", companyCols, len(companies), func(i int) []any {
		name := fmt.Sprintf("%s %s %d Lda", bizWords[i%len(bizWords)], bizKinds[i%len(bizKinds)], i)
		return companyRow(&Company{ID: companies[i].id, LegalName: name, NIF: fmt.Sprintf("50%08d", i), Status: "active", CreatedAt: start})
	})
	if err != nil {
		return err
	}
	report("%d companies", len(companies))

	for co, c := range companies {
		plan := docPlan{coID: c.id, co: co, customers: c.customers, start: start, span: span, shape: spec.Shape, today: today}
		if err := g.copyCompany(ctx, conn, plan, c); err != nil {
			return err
		}
		if co == 0 || co%100 == 0 {
			report("company %d/%d: %d customers, %d documents", co+1, len(companies), c.customers, c.documents)
		}
	}
	report("VACUUM ANALYZE")
	if _, err := conn.Exec(ctx, "VACUUM ANALYZE"); err != nil {
		return fmt.Errorf("gendata: vacuum: %w", err)
	}
	report("done")
	return nil
}

// largeCompany is one company of the large set and how much it holds.
type largeCompany struct {
	id                   string
	customers, documents int
}

// copyCompany streams one company's customers, documents, their lines and
// their AGT submissions (co is the company's index in the set).
func (g gen) copyCompany(ctx context.Context, conn *pgx.Conn, plan docPlan, c largeCompany) error {
	co := plan.co
	err := copyRows(ctx, conn, "customers", customerCols, c.customers, func(i int) []any {
		cust := g.customerIn(plan.shape, c.id, co, i, plan.start.Add(time.Duration(i)*time.Minute))
		return customerRow(&cust)
	})
	if err != nil {
		return err
	}
	err = copyRows(ctx, conn, "documents", documentCols, c.documents, func(i int) []any {
		d := g.documentAt(plan, i, nil)
		return documentRow(&d)
	})
	if err != nil {
		return err
	}
	var d Document
	err = copyRows(ctx, conn, "document_lines", lineCols, 3*c.documents, func(i int) []any {
		if i%3 == 0 { // rows come in order: make each document once
			d = g.documentAt(plan, i/3, nil)
		}
		return lineRow(d.ID, &d.Lines[i%3])
	})
	if err != nil {
		return err
	}
	var sent []Document
	for i := 0; i < c.documents; i += submitEvery {
		sent = append(sent, g.documentAt(plan, i, nil))
	}
	return copyDataset(ctx, conn, &Dataset{Submissions: g.submissionsFor(c.id, co, sent, 0)})
}
