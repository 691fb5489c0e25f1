package client

import (
	"context"
	"iter"
)

// iteratePageSize is the page size Invoices and Clients ask for when params
// name none: the largest, for the fewest requests.
const iteratePageSize = 100

// Invoices yields every invoice matching params, in the API's order, from
// params.Page (default 1) on, requesting page after page until one is short.
// An error ends the walk, yielded once with a zero Invoice.
//
// Pages are offsets, so a document issued during a walk shifts the later
// pages by one: an item the previous page already yielded is skipped, so
// nothing is yielded twice; one removed meanwhile can shift an item past the
// walk (documents are never deleted, clients rarely are).
func (a *API) Invoices(ctx context.Context, params ListInvoicesParams) iter.Seq2[Invoice, error] {
	return walk(params.Page, params.PageSize, func(page, size int) ([]Invoice, error) {
		q := params // a copy: the sequence may be ranged over more than once, at once
		q.Page, q.PageSize = &page, &size
		p, err := a.ListInvoices(ctx, q)
		if err != nil {
			return nil, err
		}
		return p.Data, nil
	}, func(inv Invoice) Id { return inv.Id })
}

// Clients yields every client matching params, newest first, as Invoices
// does.
func (a *API) Clients(ctx context.Context, params ListClientsParams) iter.Seq2[ClientRecord, error] {
	return walk(params.Page, params.PageSize, func(page, size int) ([]ClientRecord, error) {
		q := params
		q.Page, q.PageSize = &page, &size
		p, err := a.ListClients(ctx, q)
		if err != nil {
			return nil, err
		}
		return p.Data, nil
	}, func(c ClientRecord) Id { return c.Id })
}

// walk fetches page after page, from first (nil: 1) with size items (nil:
// iteratePageSize), and yields their items but those the previous page
// yielded. Each range over it walks again from first.
func walk[T any](first *Page, size *PageSize, fetch func(page, size int) ([]T, error), id func(T) Id) iter.Seq2[T, error] {
	start, per := 1, iteratePageSize
	if first != nil {
		start = *first
	}
	if size != nil {
		per = *size
	}
	return func(yield func(T, error) bool) {
		var prev map[Id]bool
		for n := start; ; n++ {
			items, err := fetch(n, per)
			if err != nil {
				var zero T
				yield(zero, err)
				return
			}
			seen := make(map[Id]bool, len(items))
			for _, it := range items {
				k := id(it)
				seen[k] = true
				if prev[k] {
					continue
				}
				if !yield(it, nil) {
					return
				}
			}
			if len(items) < per {
				return
			}
			prev = seen
		}
	}
}
