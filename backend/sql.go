package backend

import (
	"strconv"
	"strings"
	"time"
)

// dialect is what differs between the engines' SQL and values. Queries are
// written once with ? placeholders; everything engine-specific goes through
// these hooks.
type dialect struct {
	engine string
	// rebind turns the ? placeholders into the engine's own.
	rebind func(q string) string
	// dec selects a numeric column as its exact decimal text.
	dec func(col string) string
	// date selects a date column as YYYY-MM-DD text.
	date func(col string) string
	// json selects a jsonb column as text.
	json func(col string) string
	// nameLike and nifLike are search conditions with one ? each, bound to a
	// LIKE pattern (escape \) of the case-folded name / normalized NIF.
	nameLike, nifLike string
	// inIDs is a condition "col is one of the ids", bound to idsArg(ids).
	inIDs  func(col string) string
	idsArg func(ids []string) any
	// ts and tsNull wrap scan destinations of timestamp columns; tsArg
	// converts a timestamp argument.
	ts     func(*time.Time) any
	tsNull func(**time.Time) any
	tsArg  func(time.Time) any
	// uuidP and tsP are placeholders typed as uuid / timestamptz, for the
	// places PostgreSQL cannot infer a parameter's type (INSERT ... SELECT).
	uuidP, tsP string
	// planned marks a statement's arguments so that the engine plans it for
	// these values on every run; nil leaves them as they are.
	planned func(args []any) []any
}

// plannedArgs is args, marked by the dialect to be planned for their values.
func (d *dialect) plannedArgs(args []any) []any {
	if d.planned == nil {
		return args
	}
	return d.planned(args)
}

// dollarRebind numbers placeholders $1, $2, ... for PostgreSQL. Queries here
// never contain a literal '?'.
func dollarRebind(q string) string {
	var b strings.Builder
	b.Grow(len(q) + 16)
	n := 0
	for i := 0; i < len(q); i++ {
		if q[i] == '?' {
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteByte(q[i])
	}
	return b.String()
}

// queries are the static statements, rebound for the engine once at Open.
type queries struct {
	company      string
	client       string
	clientAny    string // client, deleted or not
	clientByNIF  string // the id of the company's live client with a normalized NIF
	insertClient string
	invoice      string
	invoiceLines string
	newestSubmit string
}

const clientCols = `c.id, c.name, c.nif, c.email, c.phone, c.address, c.kind, c.created_at, c.updated_at`

func invoiceCols(d *dialect) string {
	return `d.id, d.doc_type, d.series, d.seq, d.state, d.customer_id, d.customer_name,
       d.customer_nif, d.currency, ` + d.dec("d.gross_total") + `, d.issued_at, ` + d.date("d.due_date") + `, d.updated_at`
}

func lineCols(d *dialect) string {
	return `l.document_id, l.description, ` + d.dec("l.quantity") + `, ` +
		d.dec("l.unit_price") + `, ` + d.dec("l.line_total")
}

func buildQueries(d *dialect) queries {
	return queries{
		company: d.rebind(`SELECT id, legal_name, nif, status FROM companies WHERE id = ?`),
		client: d.rebind(`SELECT ` + clientCols + `
FROM customers c
WHERE c.company_id = ? AND c.id = ? AND c.deleted_at IS NULL`),
		clientAny: d.rebind(`SELECT ` + clientCols + `
FROM customers c
WHERE c.company_id = ? AND c.id = ?`),
		clientByNIF: d.rebind(`SELECT o.id FROM customers o
WHERE o.company_id = ? AND o.deleted_at IS NULL AND o.nif IS NOT NULL
  AND upper(replace(o.nif, ' ', '')) = ?
ORDER BY o.created_at, o.id
LIMIT 1`),
		// The NOT EXISTS catches a live customer whose NIF was typed in
		// another form ("500 123 4567"); the unique index decides races
		// between creates, which all store the normalized form.
		insertClient: d.rebind(`INSERT INTO customers
    (id, company_id, name, nif, email, phone, address, kind, created_at, updated_at)
SELECT ` + d.uuidP + `, ` + d.uuidP + `, ?, ?, ?, ?, ?, ?, ` + d.tsP + `, ` + d.tsP + `
WHERE CAST(? AS TEXT) IS NULL OR NOT EXISTS (
    SELECT 1 FROM customers o
    WHERE o.company_id = ? AND o.deleted_at IS NULL AND o.nif IS NOT NULL
      AND upper(replace(o.nif, ' ', '')) = ?)`),
		invoice: d.rebind(`SELECT ` + invoiceCols(d) + `
FROM documents d
WHERE d.company_id = ? AND d.id = ?`),
		invoiceLines: d.rebind(`SELECT ` + lineCols(d) + `
FROM document_lines l JOIN documents d ON d.id = l.document_id
WHERE d.company_id = ? AND d.id = ?
ORDER BY l.line_no`),
		newestSubmit: d.rebind(`SELECT s.request_id, s.submitted_at, s.checked_at, sd.status, ` + d.json("sd.errors") + `
FROM agt_submission_documents sd JOIN agt_submissions s ON s.id = sd.submission_id
WHERE sd.document_id = ? AND s.company_id = ?
ORDER BY s.submitted_at DESC, s.id DESC
LIMIT 1`),
	}
}

// where collects the conditions and arguments of a list query.
type where struct {
	conds []string
	args  []any
}

func (w *where) add(cond string, args ...any) {
	w.conds = append(w.conds, cond)
	w.args = append(w.args, args...)
}

// clone is a copy that can be added to without changing w.
func (w *where) clone() where {
	return where{conds: append([]string(nil), w.conds...), args: append([]any(nil), w.args...)}
}

func (w *where) sql() string { return strings.Join(w.conds, "\n  AND ") }
