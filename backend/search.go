package backend

import (
	"context"

	"github.com/invoicing-ao/gateway/invoicing"
)

// A client search with few matches is answered in one statement: its
// matches, read from the trigram indexes (schema/indexes.sql), are counted
// and sorted together, where a count and then a page would each read every
// match from the table (a trigram index only names candidates, each checked
// against its row): 3-7 ms twice for 600 matches over 100,000 clients.
// The matches read are capped at Config.SearchExactBelow: a search that
// reaches it has its total counted, kept and its page walked in the list's
// order, as large lists are (order.go, counts.go).

// searchPage answers page f.Page of the search in w in one statement. ok is
// false when that cannot answer it: the search has a kept total (it has many
// matches), reaches the cap, or the page is past its matches (the usual
// path tells an empty search from a page past the end).
func (s *Store) searchPage(ctx context.Context, rd reader, w where, o listOrder, f invoicing.ClientFilter) (page invoicing.Page[invoicing.Client], ok bool, err error) {
	if _, k := s.countQuery("customers c", w); s.counts.kept(k) {
		return page, false, nil
	}
	pa := pageOf(f.Page, f.PageSize, false)
	pa.few, pa.matches = true, int(s.searchExact)
	q, args := s.pageQuery(clientCols+", count(*) OVER ()", "customers c", "c", w, o, pa)
	rows, err := rd.query(ctx, q, s.d.plannedArgs(args)...)
	if err != nil {
		return page, false, s.fail(ctx, "search clients", err)
	}
	defer rows.Close()
	page = emptyPage[invoicing.Client](f.Page, f.PageSize)
	var r clientRow
	var n int64
	dest := append(r.dest(s.d), &n)
	for rows.Next() {
		r = clientRow{}
		if err := rows.Scan(dest...); err != nil {
			return page, false, s.fail(ctx, "search clients", err)
		}
		if n >= s.searchExact {
			return page, false, nil
		}
		if len(page.Data) == f.PageSize { // the row past the page: there is a next one
			page.Next = clientPosition(&page.Data[len(page.Data)-1], o)
			break
		}
		page.Data = append(page.Data, r.toClient())
	}
	if err := rows.Err(); err != nil {
		return page, false, s.fail(ctx, "search clients", err)
	}
	page.Total = n
	return page, len(page.Data) > 0, nil
}

// clientPosition is where a list of clients in order o continues after c.
func clientPosition(c *invoicing.Client, o listOrder) *invoicing.Position {
	t := c.CreatedAt.Time
	if o.changes {
		t = c.UpdatedAt.Time
	}
	return &invoicing.Position{At: &t, ID: c.ID}
}
