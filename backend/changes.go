package backend

import (
	"context"
	"fmt"
	"time"

	"github.com/invoicing-ao/gateway/invoicing"
)

// What changed, for the events' detector (events.Source): pages of
// resources, as GET answers them, in the order of a change's time and id.
// These reads run on the primary (a replica behind would let the detector
// pass a change it has not received yet), through the breaker, and get
// longer than a request's query timeout: they are background work over many
// companies.

// Changes reads what changed in the Store's database, for the events'
// detector (events.Source): the database's clock and its transactions in
// flight (inflight.go), and pages of changed invoices, clients and
// transmissions and of overdue invoices. It shares the Store's
// connections, breaker and writes in flight.
type Changes struct{ *core }

// Changes is the Store's change feed.
func (s *Store) Changes() *Changes { return s.changes }

// backgroundTimeout bounds one page of the detector's reads.
const backgroundTimeout = 30 * time.Second

// maxChangePage bounds a change query's page.
const maxChangePage = 1000

// DatabaseNow is the database's clock (PostgreSQL's; SQLite's is the
// process's): the time the platform's rows record changes in.
func (s *Changes) DatabaseNow(ctx context.Context) (time.Time, error) {
	if s.d.engine != "postgres" {
		return s.now().UTC(), nil
	}
	return run(ctx, s.breaker, func() (time.Time, error) {
		ctx, cancel := s.deadline(ctx)
		defer cancel()
		var t time.Time
		if err := s.db.reader(current, "").one(ctx, "SELECT clock_timestamp()", nil, s.d.ts(&t)); err != nil {
			return time.Time{}, s.fail(ctx, "database clock", err)
		}
		return t.UTC(), nil
	})
}

// checkChange validates q: canonical company ids, a page size in range.
// Reading every company (all) returns no ids and reads on.
func checkChange(companies []string, all bool, limit int) ([]string, bool, error) {
	if limit < 1 || limit > maxChangePage {
		return nil, false, fmt.Errorf("%w: a change page holds 1 to %d rows", ErrInvalid, maxChangePage)
	}
	if all {
		return nil, true, nil
	}
	out := make([]string, 0, len(companies))
	for _, c := range companies {
		id, ok := invoicing.CanonicalUUID(c)
		if !ok {
			return nil, false, fmt.Errorf("%w: company id %q", ErrInvalid, invoicing.Clip(c))
		}
		out = append(out, id)
	}
	return out, len(out) > 0, nil
}

// companiesWhere adds the companies' condition on column col, unless every
// company is read (companies nil).
func (s *Changes) companiesWhere(w *where, col string, companies []string) {
	if companies != nil {
		w.add(s.d.inIDs(col), s.d.idsArg(companies))
	}
}

// changeWhere selects the rows of alias t (column col holds the change time)
// of the query's companies changed in [From, To) after its position.
func (s *Changes) changeWhere(q invoicing.ChangeQuery, companies []string, t, col string) where {
	var w where
	s.companiesWhere(&w, t+".company_id", companies)
	w.add(col+" >= "+s.d.tsP, s.d.tsArg(q.From.UTC()))
	w.add(col+" < "+s.d.tsP, s.d.tsArg(q.To.UTC()))
	if q.After != nil && q.After.At != nil {
		if id, ok := invoicing.CanonicalUUID(q.After.ID); ok {
			w.add("("+col+", "+t+".id) > ("+s.d.tsP+", "+s.d.uuidP+")", s.d.tsArg(q.After.At.UTC()), id)
		}
	}
	return w
}

// ChangedInvoices reads the documents of q's companies whose updated_at is
// in [From, To), after q.After, oldest change first, with items and
// transmission.
func (s *Changes) ChangedInvoices(ctx context.Context, q invoicing.ChangeQuery) ([]invoicing.Changed[invoicing.Invoice], error) {
	companies, read, err := checkChange(q.Companies, q.All, q.Limit)
	if err != nil || !read {
		return nil, err
	}
	w := s.changeWhere(q, companies, "d", "d.updated_at")
	sql := "SELECT d.company_id, " + invoiceCols(s.d) + "\nFROM documents d\nWHERE " + w.sql() +
		"\nORDER BY d.updated_at, d.id\nLIMIT " + fmt.Sprint(q.Limit)
	return run(ctx, s.breaker, func() ([]invoicing.Changed[invoicing.Invoice], error) {
		return s.invoicesBy(ctx, "changed invoices", s.d.rebind(sql), w.args, today(s.now()), func(r *invoiceRow) time.Time { return r.UpdatedAt })
	})
}

// OverdueInvoices reads the issued FT and ND of q's companies due in
// [From, To), by id. Their status is judged on the day To (the day whose
// start made them overdue).
func (s *Changes) OverdueInvoices(ctx context.Context, q invoicing.OverdueQuery) ([]invoicing.Changed[invoicing.Invoice], error) {
	companies, read, err := checkChange(q.Companies, q.All, q.Limit)
	if err != nil || !read {
		return nil, err
	}
	if !validDate(q.From) || !validDate(q.To) {
		return nil, fmt.Errorf("%w: overdue dates must be YYYY-MM-DD", ErrInvalid)
	}
	var w where
	s.companiesWhere(&w, "d.company_id", companies)
	w.add("d.state = 'issued' AND d.doc_type IN (" + overdueTypes + ")")
	w.add("d.due_date >= ?", q.From)
	w.add("d.due_date < ?", q.To)
	if id, ok := invoicing.CanonicalUUID(q.AfterID); ok {
		w.add("d.id > "+s.d.uuidP, id)
	}
	sql := "SELECT d.company_id, " + invoiceCols(s.d) + "\nFROM documents d\nWHERE " + w.sql() +
		"\nORDER BY d.id\nLIMIT " + fmt.Sprint(q.Limit)
	return run(ctx, s.breaker, func() ([]invoicing.Changed[invoicing.Invoice], error) {
		return s.invoicesBy(ctx, "overdue invoices", s.d.rebind(sql), w.args, q.To, func(r *invoiceRow) time.Time { return r.UpdatedAt })
	})
}

func validDate(s string) bool {
	_, err := time.Parse("2006-01-02", s)
	return err == nil
}

// ChangedTransmissions reads the documents of q's companies whose AGT
// submissions were sent or answered in [From, To) (the later of
// submitted_at and checked_at), after q.After, in that order. A document in
// two such submissions comes twice.
func (s *Changes) ChangedTransmissions(ctx context.Context, q invoicing.ChangeQuery) ([]invoicing.Changed[invoicing.Invoice], error) {
	companies, read, err := checkChange(q.Companies, q.All, q.Limit)
	if err != nil || !read {
		return nil, err
	}
	var w where
	s.companiesWhere(&w, "s.company_id", companies)
	// The coarse condition lets an index on either time narrow the scan.
	w.add("(s.submitted_at >= "+s.d.tsP+" OR s.checked_at >= "+s.d.tsP+")", s.d.tsArg(q.From.UTC()), s.d.tsArg(q.From.UTC()))
	inner := "SELECT CASE WHEN s.checked_at IS NOT NULL AND s.checked_at > s.submitted_at THEN s.checked_at ELSE s.submitted_at END AS at,\n" +
		"       sd.document_id AS id, s.company_id\nFROM agt_submissions s JOIN agt_submission_documents sd ON sd.submission_id = s.id\nWHERE " + w.sql()
	var outer where
	outer.add("t.at >= "+s.d.tsP, s.d.tsArg(q.From.UTC()))
	outer.add("t.at < "+s.d.tsP, s.d.tsArg(q.To.UTC()))
	if q.After != nil && q.After.At != nil {
		if id, ok := invoicing.CanonicalUUID(q.After.ID); ok {
			outer.add("(t.at, t.id) > ("+s.d.tsP+", "+s.d.uuidP+")", s.d.tsArg(q.After.At.UTC()), id)
		}
	}
	sql := s.d.rebind("SELECT t.at, t.id, t.company_id FROM (\n" + inner + "\n) t\nWHERE " + outer.sql() +
		"\nORDER BY t.at, t.id\nLIMIT " + fmt.Sprint(q.Limit))
	args := append(w.args, outer.args...)
	return run(ctx, s.breaker, func() ([]invoicing.Changed[invoicing.Invoice], error) {
		ctx, cancel := context.WithTimeout(ctx, max(s.timeout, backgroundTimeout))
		defer cancel()
		type hit struct {
			at          time.Time
			id, company string
		}
		var hits []hit
		rows, err := s.db.reader(current, "").query(ctx, sql, args...)
		if err != nil {
			return nil, s.fail(ctx, "changed transmissions", err)
		}
		defer rows.Close()
		for rows.Next() {
			var h hit
			if err := rows.Scan(s.d.ts(&h.at), &h.id, &h.company); err != nil {
				return nil, s.fail(ctx, "changed transmissions", err)
			}
			hits = append(hits, h)
		}
		if err := rows.Err(); err != nil {
			return nil, s.fail(ctx, "changed transmissions", err)
		}
		rows.Close()
		if len(hits) == 0 {
			return nil, nil
		}
		ids := make([]string, len(hits))
		for i, h := range hits {
			ids[i] = h.id
		}
		byIDSQL := s.d.rebind("SELECT d.company_id, " + invoiceCols(s.d) + "\nFROM documents d\nWHERE " + s.d.inIDs("d.id"))
		invs, err := s.invoicesBy(ctx, "changed transmissions", byIDSQL, []any{s.d.idsArg(ids)}, today(s.now()), nil)
		if err != nil {
			return nil, err
		}
		byID := make(map[string]invoicing.Invoice, len(invs))
		for _, c := range invs {
			byID[c.Resource.ID] = c.Resource
		}
		out := make([]invoicing.Changed[invoicing.Invoice], 0, len(hits))
		for _, h := range hits {
			if inv, ok := byID[h.id]; ok {
				out = append(out, invoicing.Changed[invoicing.Invoice]{CompanyID: h.company, At: h.at.UTC(), Resource: inv})
			}
		}
		return out, nil
	})
}

// ChangedClients reads the live customers of q's companies whose updated_at
// is in [From, To), after q.After, oldest change first.
func (s *Changes) ChangedClients(ctx context.Context, q invoicing.ChangeQuery) ([]invoicing.Changed[invoicing.Client], error) {
	companies, read, err := checkChange(q.Companies, q.All, q.Limit)
	if err != nil || !read {
		return nil, err
	}
	w := s.changeWhere(q, companies, "c", "c.updated_at")
	w.add("c.deleted_at IS NULL")
	sql := s.d.rebind("SELECT c.company_id, " + clientCols + "\nFROM customers c\nWHERE " + w.sql() +
		"\nORDER BY c.updated_at, c.id\nLIMIT " + fmt.Sprint(q.Limit))
	return run(ctx, s.breaker, func() ([]invoicing.Changed[invoicing.Client], error) {
		ctx, cancel := context.WithTimeout(ctx, max(s.timeout, backgroundTimeout))
		defer cancel()
		rows, err := s.db.reader(current, "").query(ctx, sql, w.args...)
		if err != nil {
			return nil, s.fail(ctx, "changed clients", err)
		}
		defer rows.Close()
		var out []invoicing.Changed[invoicing.Client]
		var r clientRow
		var company string
		dest := append([]any{&company}, r.dest(s.d)...)
		for rows.Next() {
			r = clientRow{}
			if err := rows.Scan(dest...); err != nil {
				return nil, s.fail(ctx, "changed clients", err)
			}
			c := r.toClient()
			out = append(out, invoicing.Changed[invoicing.Client]{CompanyID: company, At: c.UpdatedAt.Time, Resource: c})
		}
		if err := rows.Err(); err != nil {
			return nil, s.fail(ctx, "changed clients", err)
		}
		return out, nil
	})
}

// invoicesBy runs a query of documents (company id, then invoiceCols) and
// returns them complete: items, and the transmission of GetInvoice. at
// gives each its change time (nil: none).
func (s *Changes) invoicesBy(ctx context.Context, op, sql string, args []any, today string, at func(*invoiceRow) time.Time) ([]invoicing.Changed[invoicing.Invoice], error) {
	ctx, cancel := context.WithTimeout(ctx, max(s.timeout, backgroundTimeout))
	defer cancel()
	rows, err := s.db.reader(current, "").query(ctx, sql, args...)
	if err != nil {
		return nil, s.fail(ctx, op, err)
	}
	defer rows.Close()
	var out []invoicing.Changed[invoicing.Invoice]
	var r invoiceRow
	var company string
	dest := append([]any{&company}, r.dest(s.d)...)
	for rows.Next() {
		r = invoiceRow{}
		if err := rows.Scan(dest...); err != nil {
			return nil, s.fail(ctx, op, err)
		}
		inv, err := r.toInvoice(today)
		if err != nil {
			return nil, s.fail(ctx, op, err)
		}
		c := invoicing.Changed[invoicing.Invoice]{CompanyID: company, Resource: inv}
		if at != nil {
			c.At = at(&r).UTC()
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, s.fail(ctx, op, err)
	}
	rows.Close()
	if len(out) == 0 {
		return nil, nil
	}
	if err := s.completeInvoices(ctx, op, out); err != nil {
		return nil, err
	}
	return out, nil
}

// completeInvoices adds items and transmissions to invoices read without
// them, in two queries for the lot.
func (s *Changes) completeInvoices(ctx context.Context, op string, invs []invoicing.Changed[invoicing.Invoice]) error {
	ids := make([]string, len(invs))
	byID := make(map[string]int, len(invs))
	for i := range invs {
		ids[i] = invs[i].Resource.ID
		byID[ids[i]] = i
	}
	lq := s.d.rebind("SELECT " + lineCols(s.d) + "\nFROM document_lines l\nWHERE " + s.d.inIDs("l.document_id") + "\nORDER BY l.document_id, l.line_no")
	rd := s.db.reader(current, "")
	err := rd.eachLine(ctx, lq, []any{s.d.idsArg(ids)}, func(l *lineRow, item invoicing.InvoiceItem) {
		inv := &invs[byID[l.DocumentID]].Resource
		inv.Items = append(inv.Items, item)
	})
	if err != nil {
		return s.fail(ctx, op+" lines", err)
	}
	// Each document's newest submission, in GetInvoice's order.
	sq := s.d.rebind(`SELECT t.document_id, t.request_id, t.submitted_at, t.checked_at, t.status, t.errors FROM (
  SELECT sd.document_id, s.request_id, s.submitted_at, s.checked_at, sd.status, ` + s.d.json("sd.errors") + ` AS errors,
         ROW_NUMBER() OVER (PARTITION BY sd.document_id ORDER BY s.submitted_at DESC, s.id DESC) AS rn
  FROM agt_submission_documents sd
  JOIN agt_submissions s ON s.id = sd.submission_id
  JOIN documents d ON d.id = sd.document_id AND d.company_id = s.company_id
  WHERE ` + s.d.inIDs("sd.document_id") + `
) t WHERE t.rn = 1`)
	rows, err := rd.query(ctx, sq, s.d.idsArg(ids))
	if err != nil {
		return s.fail(ctx, op+" transmissions", err)
	}
	defer rows.Close()
	subs := make(map[string]*submission, len(invs))
	for rows.Next() {
		var doc string
		var sb submission
		if err := rows.Scan(&doc, &sb.RequestID, s.d.ts(&sb.SubmittedAt), s.d.tsNull(&sb.CheckedAt), &sb.Status, &sb.Errors); err != nil {
			return s.fail(ctx, op+" transmissions", err)
		}
		subs[doc] = &sb
	}
	if err := rows.Err(); err != nil {
		return s.fail(ctx, op+" transmissions", err)
	}
	for i := range invs {
		inv := &invs[i].Resource
		if inv.Transmission, err = transmission(inv.Type, subs[inv.ID]); err != nil {
			return s.fail(ctx, op+" transmissions", err)
		}
	}
	return nil
}
