package backend

import (
	"context"
	"fmt"
	"time"

	"github.com/invoicing-ao/gateway/invoicing"
)

// listOrder is a list's total order: its ORDER BY, and how to continue after
// a position (keyset pagination: no OFFSET, so page 10,000 costs what page 1
// does, and rows inserted meanwhile are neither repeated nor skipped).
type listOrder struct {
	by string // the ORDER BY, ending with the id: a total order
	// after is the condition "comes after p" in this order, with its args.
	after func(d *dialect, p invoicing.Position) (string, []any)
	// changes is set for the updatedAt order, which selects a time range.
	changes bool
}

// Orders of the lists. Row-value comparisons ((a, b) < (?, ?)) follow the
// indexes' column order, so PostgreSQL starts the index scan at the position.
var (
	// Invoices: drafts first (no issue date), then newest issue, ties by id,
	// all descending.
	invoicesByIssue = listOrder{
		by: "d.issued_at DESC NULLS FIRST, d.id DESC",
		after: func(d *dialect, p invoicing.Position) (string, []any) {
			if p.At == nil { // a draft: the drafts after it, then every issued one
				return "((d.issued_at IS NULL AND d.id < " + d.uuidP + ") OR d.issued_at IS NOT NULL)", []any{p.ID}
			}
			return "(d.issued_at, d.id) < (" + d.tsP + ", " + d.uuidP + ")", []any{d.tsArg(*p.At), p.ID}
		},
	}
	invoicesByChange = listOrder{by: "d.updated_at, d.id", after: afterChange("d"), changes: true}
	// Clients: newest first, ties by id.
	clientsByCreation = listOrder{
		by: "c.created_at DESC, c.id DESC",
		after: func(d *dialect, p invoicing.Position) (string, []any) {
			if p.At == nil {
				return "", nil // never made by this order; refused by positionOK
			}
			return "(c.created_at, c.id) < (" + d.tsP + ", " + d.uuidP + ")", []any{d.tsArg(*p.At), p.ID}
		},
	}
	clientsByChange = listOrder{by: "c.updated_at, c.id", after: afterChange("c"), changes: true}
)

// afterChange continues the updatedAt order (oldest first) of table alias t.
func afterChange(t string) func(d *dialect, p invoicing.Position) (string, []any) {
	return func(d *dialect, p invoicing.Position) (string, []any) {
		if p.At == nil {
			return "", nil
		}
		return "(" + t + ".updated_at, " + t + ".id) > (" + d.tsP + ", " + d.uuidP + ")", []any{d.tsArg(*p.At), p.ID}
	}
}

// defaultChangesSettle is how far behind now the changes of a list stop
// (Config.ChangesSettle).
const defaultChangesSettle = 5 * time.Second

// addChanges selects what changed at or after since and before the settle
// cutoff: a row whose transaction began before the cutoff but commits after
// a sync read the list would otherwise carry a time the sync had passed.
func (s *Store) addChanges(w *where, t string, since *time.Time) {
	if since == nil {
		return
	}
	w.add(t+".updated_at >= "+s.d.tsP, s.d.tsArg(since.UTC()))
	w.add(t+".updated_at < "+s.d.tsP, s.d.tsArg(s.now().Add(-s.settle).UTC()))
}

// addAfter adds the position condition of o, checking the position first.
func (s *Store) addAfter(w *where, o listOrder, p *invoicing.Position) error {
	if p == nil {
		return nil
	}
	id, ok := invoicing.CanonicalUUID(p.ID)
	if !ok || id != p.ID {
		return fmt.Errorf("%w: position id", ErrInvalid)
	}
	cond, args := o.after(s.d, *p)
	if cond == "" {
		return fmt.Errorf("%w: position without a time in an order by time", ErrInvalid)
	}
	w.add(cond, args...)
	return nil
}

// continueAfter adds to pw the condition "after p" in order o. After a
// draft's position in the invoices' usual order, the order's own condition
// is an OR that no index serves in order: PostgreSQL would skip every draft
// before the position, page after page. pw then takes only the drafts after
// it (an index range), and wide, returned, is the order's own condition, for
// when the drafts run out within the page.
func (s *Store) continueAfter(pw *where, o listOrder, p *invoicing.Position) (wide *where, err error) {
	if p == nil || p.At != nil || o.by != invoicesByIssue.by {
		return nil, s.addAfter(pw, o, p)
	}
	w := pw.clone()
	if err := s.addAfter(&w, o, p); err != nil {
		return nil, err
	}
	pw.add("d.issued_at IS NULL AND d.id < "+s.d.uuidP, p.ID)
	return &w, nil
}

// orderOf is the order a filter asks for.
func orderOf(changes bool, byChange, usual listOrder) listOrder {
	if changes {
		return byChange
	}
	return usual
}

// pageQuery is the SELECT of one page of from (with alias a) in order o:
// after a position, the first limit rows past it; otherwise a deferred
// join whose OFFSET skips entries of an index that holds the order and the
// filter's columns (schema/indexes.sql; an index-only scan), reading only
// the page's rows from the table.
//
// A page of few matches (pageArgs.few) is read from the matches instead,
// then sorted: a search's condition is a LIKE that no index holds in the
// list's order, and PostgreSQL, which cannot tell a rare fragment from a
// common one, walks the order's index and filters it row by row, which
// finds the 21 rows of a common fragment in a few hundred rows but reads
// all 100,000 of the company's clients for a rare one (150 ms, against
// under 1 ms from its trigram index). MATERIALIZED keeps the planner from
// merging the two again. pageArgs.matches caps the matches read (a page
// counted in the same statement reads at most that many: search.go).
func (s *Store) pageQuery(cols, from, a string, w where, o listOrder, f pageArgs) (string, []any) {
	args := append([]any(nil), w.args...)
	if f.few {
		matches := ""
		if f.matches > 0 {
			matches, args = "\nLIMIT ?", append(args, f.matches)
		}
		q := "WITH m AS MATERIALIZED (SELECT " + a + ".* FROM " + from + "\nWHERE " + w.sql() + matches + ")\nSELECT " + cols +
			"\nFROM m " + a + "\nORDER BY " + o.by + "\nLIMIT ? OFFSET ?"
		return s.d.rebind(q), append(args, f.limit, f.offset)
	}
	if f.after {
		q := "SELECT " + cols + "\nFROM " + from + "\nWHERE " + w.sql() + "\nORDER BY " + o.by + "\nLIMIT ?"
		return s.d.rebind(q), append(args, f.limit)
	}
	q := "SELECT " + cols + "\nFROM " + from + "\nJOIN (SELECT " + a + ".id FROM " + from + "\nWHERE " + w.sql() +
		"\nORDER BY " + o.by + "\nLIMIT ? OFFSET ?) p ON p.id = " + a + ".id" + "\nORDER BY " + o.by
	return s.d.rebind(q), append(args, f.limit, f.offset)
}

// pageArgs is how a page is cut: limit is one more than the page's size, to
// learn whether another page follows.
type pageArgs struct {
	after         bool
	limit, offset int
	few           bool // a search with few matches: read from its matches (pageQuery)
	matches       int  // with few, read at most this many matches; 0: all
}

func pageOf(page, size int, after bool) pageArgs {
	if after {
		return pageArgs{after: true, limit: size + 1}
	}
	return pageArgs{limit: size + 1, offset: (page - 1) * size}
}

// listSpec is one list request as the adapter runs it: its conditions w
// (the company's id first), its order, and the page asked for.
type listSpec struct {
	op, from   string // e.g. "count invoices", "documents d"
	w          where
	o          listOrder
	after      *invoicing.Position
	page, size int
	search     bool // w holds a search (Config.SearchExactBelow)
}

// plan counts the list's total (counts.go) and plans the page: pw is w with
// the position, if any, and plan how to cut the page (bookmarks.go). done
// means the page starts past the end: nothing to read.
func (s *Store) plan(ctx context.Context, rd reader, ls listSpec) (total int64, pw where, plan deepPage, done bool, err error) {
	if total, err = s.listTotal(ctx, rd, ls.op, ls.from, ls.w, ls.search); err != nil {
		return 0, where{}, deepPage{}, false, err
	}
	if ls.after == nil && pastEnd(ls.page, ls.size, total) {
		return total, where{}, deepPage{}, true, nil
	}
	pw = ls.w.clone()
	wide, err := s.continueAfter(&pw, ls.o, ls.after)
	if err != nil {
		return 0, where{}, deepPage{}, false, err
	}
	pa := pageOf(ls.page, ls.size, ls.after != nil)
	pa.few = ls.search && total < s.searchExact
	plan, err = s.planPage(ls.w, &pw, ls.o, total, pa)
	if wide != nil {
		plan.wide = wide
	}
	return total, pw, plan, false, err
}
