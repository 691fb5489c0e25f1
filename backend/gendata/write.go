package gendata

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	_ "modernc.org/sqlite" // driver "sqlite"
)

// Write inserts the dataset in one transaction into the database at url
// ("postgres://..." or "sqlite:PATH"), which must hold the platform schema.
func Write(ctx context.Context, url string, d *Dataset) error {
	switch {
	case strings.HasPrefix(url, "postgres://"), strings.HasPrefix(url, "postgresql://"):
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			return fmt.Errorf("gendata: connect: %w", err)
		}
		defer conn.Close(ctx)
		return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error { return copyDataset(ctx, tx, d) })
	case strings.HasPrefix(url, "sqlite:"):
		db, err := sql.Open("sqlite", strings.TrimPrefix(url, "sqlite:")+"?_pragma=foreign_keys(1)&_pragma=busy_timeout(5000)")
		if err != nil {
			return fmt.Errorf("gendata: open: %w", err)
		}
		defer db.Close()
		return insertSQLite(ctx, db, d)
	}
	return errors.New("gendata: database URL must be a postgres:// or sqlite: URL")
}

// Row layouts shared by both writers: column lists and the values of a row.

var (
	companyCols    = []string{"id", "legal_name", "nif", "status", "created_at"}
	customerCols   = []string{"id", "company_id", "name", "nif", "email", "phone", "address", "kind", "created_at", "updated_at", "deleted_at"}
	documentCols   = []string{"id", "company_id", "doc_type", "series", "seq", "state", "customer_id", "customer_name", "customer_nif", "currency", "net_total", "tax_total", "gross_total", "issued_at", "due_date", "related_id", "created_at", "updated_at"}
	lineCols       = []string{"document_id", "line_no", "description", "quantity", "unit_price", "tax_rate", "line_total"}
	submissionCols = []string{"id", "company_id", "request_id", "submitted_at", "result_code", "checked_at"}
	subDocCols     = []string{"submission_id", "document_id", "status", "errors"}
)

// valueKinds tell each writer how to encode a column value.
type (
	uuidV    string
	uuidNull *string
	decV     string
	tsV      time.Time
	tsNull   *time.Time
	dateNull *string
)

func companyRow(c *Company) []any {
	return []any{uuidV(c.ID), c.LegalName, c.NIF, c.Status, tsV(c.CreatedAt)}
}

func customerRow(c *Customer) []any {
	return []any{uuidV(c.ID), uuidV(c.CompanyID), c.Name, c.NIF, c.Email, c.Phone, c.Address, c.Kind,
		tsV(c.CreatedAt), tsV(orCreated(c.UpdatedAt, c.CreatedAt)), tsNull(c.DeletedAt)}
}

func documentRow(d *Document) []any {
	return []any{uuidV(d.ID), uuidV(d.CompanyID), d.DocType, d.Series, int32(d.Seq), d.State,
		uuidNull(d.CustomerID), d.CustomerName, d.CustomerNIF, d.Currency,
		decV(d.NetTotal), decV(d.TaxTotal), decV(d.GrossTotal), tsNull(d.IssuedAt), dateNull(d.DueDate),
		uuidNull(d.RelatedID), tsV(d.CreatedAt), tsV(orCreated(d.UpdatedAt, d.CreatedAt))}
}

// orCreated is a row's updated_at: its own, or its creation when it has none.
func orCreated(updated, created time.Time) time.Time {
	if updated.IsZero() {
		return created
	}
	return updated
}

func lineRow(docID string, l *Line) []any {
	return []any{uuidV(docID), int32(l.LineNo), l.Description, decV(l.Quantity), decV(l.UnitPrice),
		decV(l.TaxRate), decV(l.LineTotal)}
}

func submissionRow(s *Submission) []any {
	return []any{uuidV(s.ID), uuidV(s.CompanyID), s.RequestID, tsV(s.SubmittedAt), s.ResultCode, tsNull(s.CheckedAt)}
}

func subDocRow(subID string, sd *SubmissionDocument) []any {
	return []any{uuidV(subID), uuidV(sd.DocumentID), sd.Status, sd.Errors}
}

// pgValue converts a row value for pgx's binary COPY.
func pgValue(v any) (any, error) {
	switch x := v.(type) {
	case uuidV:
		var u pgtype.UUID
		return u, u.Scan(string(x))
	case uuidNull:
		if x == nil {
			return nil, nil
		}
		var u pgtype.UUID
		return u, u.Scan(*x)
	case decV:
		var n pgtype.Numeric
		return n, n.Scan(string(x))
	case tsV:
		return time.Time(x), nil
	case tsNull:
		if x == nil {
			return nil, nil
		}
		return *x, nil
	case dateNull:
		if x == nil {
			return nil, nil
		}
		t, err := time.Parse("2006-01-02", *x)
		return pgtype.Date{Time: t, Valid: true}, err
	}
	return v, nil
}

// sqliteValue converts a row value to the SQLite translation's storage.
func sqliteValue(v any) any {
	const layout = "2006-01-02T15:04:05.000000Z"
	switch x := v.(type) {
	case uuidV:
		return string(x)
	case uuidNull:
		if x == nil {
			return nil
		}
		return *x
	case decV:
		return string(x)
	case tsV:
		return time.Time(x).UTC().Format(layout)
	case tsNull:
		if x == nil {
			return nil
		}
		return (*x).UTC().Format(layout)
	case dateNull:
		if x == nil {
			return nil
		}
		return *x
	case *int16:
		if x == nil {
			return nil
		}
		return int64(*x)
	}
	return v
}

// rowSource feeds pgx.CopyFrom from a row function, converting values.
type rowSource struct {
	n    int
	i    int
	row  func(i int) []any
	vals []any
	err  error
}

func (s *rowSource) Next() bool {
	if s.err != nil || s.i >= s.n {
		return false
	}
	raw := s.row(s.i)
	s.i++
	s.vals = s.vals[:0]
	for _, v := range raw {
		pv, err := pgValue(v)
		if err != nil {
			s.err = err
			return false
		}
		s.vals = append(s.vals, pv)
	}
	return true
}

func (s *rowSource) Values() ([]any, error) { return s.vals, nil }
func (s *rowSource) Err() error             { return s.err }

type copier interface {
	CopyFrom(ctx context.Context, table pgx.Identifier, cols []string, src pgx.CopyFromSource) (int64, error)
}

func copyRows(ctx context.Context, c copier, table string, cols []string, n int, row func(i int) []any) error {
	if n == 0 {
		return nil
	}
	_, err := c.CopyFrom(ctx, pgx.Identifier{table}, cols, &rowSource{n: n, row: row})
	if err != nil {
		return fmt.Errorf("gendata: copy %s: %w", table, err)
	}
	return nil
}

func copyDataset(ctx context.Context, c copier, d *Dataset) error {
	type lineRef struct {
		doc  string
		line *Line
	}
	var lines []lineRef
	for i := range d.Documents {
		for j := range d.Documents[i].Lines {
			lines = append(lines, lineRef{d.Documents[i].ID, &d.Documents[i].Lines[j]})
		}
	}
	type subRef struct {
		sub string
		doc *SubmissionDocument
	}
	var subDocs []subRef
	for i := range d.Submissions {
		for j := range d.Submissions[i].Documents {
			subDocs = append(subDocs, subRef{d.Submissions[i].ID, &d.Submissions[i].Documents[j]})
		}
	}
	steps := []struct {
		table string
		cols  []string
		n     int
		row   func(i int) []any
	}{
		{"companies", companyCols, len(d.Companies), func(i int) []any { return companyRow(&d.Companies[i]) }},
		{"customers", customerCols, len(d.Customers), func(i int) []any { return customerRow(&d.Customers[i]) }},
		{"documents", documentCols, len(d.Documents), func(i int) []any { return documentRow(&d.Documents[i]) }},
		{"document_lines", lineCols, len(lines), func(i int) []any { return lineRow(lines[i].doc, lines[i].line) }},
		{"agt_submissions", submissionCols, len(d.Submissions), func(i int) []any { return submissionRow(&d.Submissions[i]) }},
		{"agt_submission_documents", subDocCols, len(subDocs), func(i int) []any { return subDocRow(subDocs[i].sub, subDocs[i].doc) }},
	}
	for _, s := range steps {
		if err := copyRows(ctx, c, s.table, s.cols, s.n, s.row); err != nil {
			return err
		}
	}
	return nil
}

func insertSQLite(ctx context.Context, db *sql.DB, d *Dataset) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("gendata: begin: %w", err)
	}
	defer tx.Rollback()
	insert := func(table string, cols []string, row []any) error {
		q := "INSERT INTO " + table + " (" + strings.Join(cols, ", ") + ") VALUES (?" +
			strings.Repeat(", ?", len(cols)-1) + ")"
		args := make([]any, len(row))
		for i, v := range row {
			args[i] = sqliteValue(v)
		}
		if _, err := tx.ExecContext(ctx, q, args...); err != nil {
			return fmt.Errorf("gendata: insert %s: %w", table, err)
		}
		return nil
	}
	for i := range d.Companies {
		if err := insert("companies", companyCols, companyRow(&d.Companies[i])); err != nil {
			return err
		}
	}
	for i := range d.Customers {
		if err := insert("customers", customerCols, customerRow(&d.Customers[i])); err != nil {
			return err
		}
	}
	for i := range d.Documents {
		doc := &d.Documents[i]
		if err := insert("documents", documentCols, documentRow(doc)); err != nil {
			return err
		}
		for j := range doc.Lines {
			if err := insert("document_lines", lineCols, lineRow(doc.ID, &doc.Lines[j])); err != nil {
				return err
			}
		}
	}
	for i := range d.Submissions {
		s := &d.Submissions[i]
		if err := insert("agt_submissions", submissionCols, submissionRow(s)); err != nil {
			return err
		}
		for j := range s.Documents {
			if err := insert("agt_submission_documents", subDocCols, subDocRow(s.ID, &s.Documents[j])); err != nil {
				return err
			}
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("gendata: commit: %w", err)
	}
	return nil
}
