package backend

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/invoicing-ao/gateway/invoicing"
)

// invoiceRow is a documents row as read; toInvoice is the one mapper used by
// list and get.
type invoiceRow struct {
	ID, DocType, Series, State string
	Seq                        int64
	CustomerID                 *string
	CustomerName               string
	CustomerNIF                *string
	Currency                   string
	GrossTotal                 string
	IssuedAt                   *time.Time
	DueDate                    *string
	UpdatedAt                  time.Time
}

func (r *invoiceRow) dest(d *dialect) []any {
	return []any{&r.ID, &r.DocType, &r.Series, &r.Seq, &r.State, &r.CustomerID, &r.CustomerName,
		&r.CustomerNIF, &r.Currency, &r.GrossTotal, d.tsNull(&r.IssuedAt), &r.DueDate, d.ts(&r.UpdatedAt)}
}

func (r *invoiceRow) toInvoice(today string) (invoicing.Invoice, error) {
	status, err := invoiceStatus(r.DocType, r.State, r.DueDate, today)
	if err != nil {
		return invoicing.Invoice{}, err
	}
	total, err := canonicalDecimal(r.GrossTotal, moneyScale)
	if err != nil {
		return invoicing.Invoice{}, err
	}
	inv := invoicing.Invoice{
		ID: r.ID, Number: invoiceNumber(r.DocType, r.Series, r.Seq), Type: r.DocType,
		Status: status, TotalAmount: total, Currency: r.Currency, DueDate: r.DueDate,
		Customer:  invoicing.InvoiceCustomer{ID: r.CustomerID, Name: r.CustomerName, NIF: r.CustomerNIF},
		Items:     []invoicing.InvoiceItem{},
		UpdatedAt: invoicing.Timestamp{Time: r.UpdatedAt.UTC()},
	}
	if r.IssuedAt != nil {
		inv.IssuedAt = &invoicing.Timestamp{Time: r.IssuedAt.UTC()}
	}
	return inv, nil
}

// lineRow is a document_lines row as read.
type lineRow struct {
	DocumentID, Description    string
	Quantity, UnitPrice, Total string
}

func (r *lineRow) dest() []any {
	return []any{&r.DocumentID, &r.Description, &r.Quantity, &r.UnitPrice, &r.Total}
}

func (r *lineRow) toItem() (invoicing.InvoiceItem, error) {
	q, err := canonicalDecimal(r.Quantity, qtyMinScale)
	if err != nil {
		return invoicing.InvoiceItem{}, err
	}
	p, err := canonicalDecimal(r.UnitPrice, priceMinScale)
	if err != nil {
		return invoicing.InvoiceItem{}, err
	}
	t, err := canonicalDecimal(r.Total, moneyScale)
	if err != nil {
		return invoicing.InvoiceItem{}, err
	}
	return invoicing.InvoiceItem{Description: r.Description, Quantity: q, UnitPrice: p, Total: t}, nil
}

// invoiceWhere turns a filter into conditions. Status ISSUED/OVERDUE compare
// the due date with today's Luanda date for the types that can be overdue
// (invoiceStatus); from/to become a UTC range on issued_at (NULL for drafts,
// so drafts never match a date). The status index holds due_date and
// doc_type, so both stay index-only (schema/indexes.sql).
func (s *Store) invoiceWhere(companyID string, f invoicing.InvoiceFilter, today string) (where, error) {
	var w where
	w.add("d.company_id = ?", companyID)
	switch f.Status {
	case "":
	case "DRAFT":
		w.add("d.state = 'draft'")
	case "PAID":
		w.add("d.state = 'paid'")
	case "CANCELLED":
		w.add("d.state = 'cancelled'")
	case "ISSUED":
		w.add("d.state = 'issued' AND (d.due_date IS NULL OR d.due_date >= ? OR d.doc_type NOT IN ("+overdueTypes+"))", today)
	case "OVERDUE":
		w.add("d.state = 'issued' AND d.due_date < ? AND d.doc_type IN ("+overdueTypes+")", today)
	default:
		return w, fmt.Errorf("%w: status", ErrInvalid)
	}
	switch f.Type {
	case "":
	case "FT", "FR", "FS", "NC", "ND", "PF":
		w.add("d.doc_type = ?", f.Type)
	default:
		return w, fmt.Errorf("%w: type", ErrInvalid)
	}
	if f.From != "" {
		from, err := dayStart(f.From)
		if err != nil {
			return w, err
		}
		w.add("d.issued_at >= "+s.d.tsP, s.d.tsArg(from))
	}
	if f.To != "" {
		to, err := dayStart(f.To)
		if err != nil {
			return w, err
		}
		w.add("d.issued_at < "+s.d.tsP, s.d.tsArg(to.AddDate(0, 0, 1)))
	}
	return w, nil
}

// queryInvoices is ListInvoices for a canonical company id and a checked
// page. Items come in one extra query for the whole page.
func (s *Store) queryInvoices(ctx context.Context, companyID string, f invoicing.InvoiceFilter) (invoicing.Page[invoicing.Invoice], error) {
	today := today(s.now())
	w, err := s.invoiceWhere(companyID, f, today)
	if err != nil {
		return invoicing.Page[invoicing.Invoice]{}, err
	}
	s.addChanges(&w, "d", f.UpdatedSince)
	o := orderOf(f.UpdatedSince != nil, invoicesByChange, invoicesByIssue)
	page := emptyPage[invoicing.Invoice](f.Page, f.PageSize)
	if f.After != nil {
		page.Page = 0
	}
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	rd := s.db.reader(settled, companyID)

	total, pw, plan, done, err := s.plan(ctx, rd, listSpec{op: "count invoices", from: "documents d", w: w, o: o, after: f.After, page: f.Page, size: f.PageSize})
	if err != nil {
		return invoicing.Page[invoicing.Invoice]{}, err
	}
	if page.Total = total; done {
		return page, nil
	}
	var n int
	page.Data, page.Next, n, err = s.invoicePage(ctx, rd, pw, o, plan, f.PageSize, today)
	if err == nil && plan.wide != nil && n < plan.pa.limit { // the drafts ran out within the page
		page.Data, page.Next, _, err = s.invoicePage(ctx, rd, *plan.wide, o, plan, f.PageSize, today)
	}
	if err != nil {
		return invoicing.Page[invoicing.Invoice]{}, err
	}
	if len(page.Data) == 0 {
		return page, nil
	}
	ids := make([]string, len(page.Data))
	byID := make(map[string]int, len(page.Data))
	for i := range page.Data {
		ids[i] = page.Data[i].ID
		byID[ids[i]] = i
	}

	lq := s.d.rebind("SELECT " + lineCols(s.d) + "\nFROM document_lines l\nWHERE " +
		s.d.inIDs("l.document_id") + "\nORDER BY l.document_id, l.line_no")
	err = rd.eachLine(ctx, lq, []any{s.d.idsArg(ids)}, func(l *lineRow, item invoicing.InvoiceItem) {
		inv := &page.Data[byID[l.DocumentID]]
		inv.Items = append(inv.Items, item)
	})
	if err != nil {
		return invoicing.Page[invoicing.Invoice]{}, s.fail(ctx, "list invoice lines", err)
	}
	return page, nil
}

// invoicePage reads one page of invoices (without their lines) as plan cuts
// it, and returns it, the position after it when another page follows, and
// how many rows the query gave.
func (s *Store) invoicePage(ctx context.Context, rd reader, pw where, o listOrder, plan deepPage, size int, today string) ([]invoicing.Invoice, *invoicing.Position, int, error) {
	q, args := s.pageQuery(invoiceCols(s.d), "documents d", "d", pw, o, plan.pa)
	rows, err := rd.query(ctx, q, args...)
	if err != nil {
		return nil, nil, 0, s.fail(ctx, "list invoices", err)
	}
	defer rows.Close()
	var (
		r    invoiceRow
		data = make([]invoicing.Invoice, 0, size)
		next *invoicing.Position
		n    int
	)
	dest := r.dest(s.d)
	for rows.Next() {
		n++
		if len(data) == size { // the row past the page: there is a next one
			next = invoicePosition(&data[len(data)-1], o)
			break
		}
		r = invoiceRow{}
		if err := rows.Scan(dest...); err != nil {
			return nil, nil, 0, s.fail(ctx, "list invoices", err)
		}
		inv, err := r.toInvoice(today)
		if err != nil {
			return nil, nil, 0, s.fail(ctx, "list invoices", err)
		}
		if plan.mark { // the row before the page
			s.markFirst(&plan, invoicePosition(&inv, o))
			continue
		}
		data = append(data, inv)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, 0, s.fail(ctx, "list invoices", err)
	}
	return data, next, n, nil
}

// eachLine runs a document_lines query and hands each mapped line to fn.
func (rd reader) eachLine(ctx context.Context, q string, args []any, fn func(*lineRow, invoicing.InvoiceItem)) error {
	rows, err := rd.query(ctx, q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	var l lineRow
	dest := l.dest()
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return err
		}
		item, err := l.toItem()
		if err != nil {
			return err
		}
		fn(&l, item)
	}
	return rows.Err()
}

// queryInvoice is GetInvoice for canonical ids.
func (s *Store) queryInvoice(ctx context.Context, companyID, id string) (invoicing.Invoice, error) {
	today := today(s.now())
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	rd := s.db.reader(settled, companyID) // the gateway never writes invoices

	var r invoiceRow
	err := rd.one(ctx, s.q.invoice, []any{companyID, id}, r.dest(s.d)...)
	if errors.Is(err, errNoRows) {
		return invoicing.Invoice{}, ErrNotFound
	}
	if err != nil {
		return invoicing.Invoice{}, s.fail(ctx, "get invoice", err)
	}
	inv, err := r.toInvoice(today)
	if err != nil {
		return invoicing.Invoice{}, s.fail(ctx, "get invoice", err)
	}
	err = rd.eachLine(ctx, s.q.invoiceLines, []any{companyID, id}, func(_ *lineRow, item invoicing.InvoiceItem) {
		inv.Items = append(inv.Items, item)
	})
	if err != nil {
		return invoicing.Invoice{}, s.fail(ctx, "get invoice lines", err)
	}

	var sub *submission
	if r.DocType != "PF" {
		var sb submission
		err := rd.one(ctx, s.q.newestSubmit, []any{id, companyID},
			&sb.RequestID, s.d.ts(&sb.SubmittedAt), s.d.tsNull(&sb.CheckedAt), &sb.Status, &sb.Errors)
		switch {
		case err == nil:
			sub = &sb
		case !errors.Is(err, errNoRows):
			return invoicing.Invoice{}, s.fail(ctx, "get invoice transmission", err)
		}
	}
	inv.Transmission, err = transmission(r.DocType, sub)
	if err != nil {
		return invoicing.Invoice{}, s.fail(ctx, "get invoice transmission", err)
	}
	return inv, nil
}

// invoicePosition is inv's place in order o.
func invoicePosition(inv *invoicing.Invoice, o listOrder) *invoicing.Position {
	if o.changes {
		t := inv.UpdatedAt.Time
		return &invoicing.Position{At: &t, ID: inv.ID}
	}
	p := &invoicing.Position{ID: inv.ID}
	if inv.IssuedAt != nil {
		t := inv.IssuedAt.Time
		p.At = &t
	}
	return p
}
