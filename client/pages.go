package client

import (
	"context"
	"iter"
)

// iteratePageSize is the page size Invoices and Clients ask for when params
// name none: the largest, for the fewest requests.
const iteratePageSize = 100

// Invoices yields every invoice matching params, in the list's order: the
// first page as params ask (by default the first), then page after page by
// the answers' nextCursor until it is null. A walk by cursor never repeats or
// skips an item, also while new ones are issued. With UpdatedSince it is a
// sync: what changed since, oldest first. An error ends the walk, yielded
// once with a zero Invoice.
func (a *API) Invoices(ctx context.Context, params ListInvoicesParams) iter.Seq2[Invoice, error] {
	return walk(params.PageSize, func(size int, cursor *string) ([]Invoice, *string, error) {
		q := params // a copy: the sequence may be ranged over more than once, at once
		q.PageSize = &size
		if cursor != nil {
			q.Page, q.Cursor = nil, cursor // a cursor says where the page starts
		}
		p, err := a.ListInvoices(ctx, q)
		if err != nil {
			return nil, nil, err
		}
		return p.Data, p.NextCursor, nil
	})
}

// Clients yields every client matching params, as Invoices does.
func (a *API) Clients(ctx context.Context, params ListClientsParams) iter.Seq2[ClientRecord, error] {
	return walk(params.PageSize, func(size int, cursor *string) ([]ClientRecord, *string, error) {
		q := params
		q.PageSize = &size
		if cursor != nil {
			q.Page, q.Cursor = nil, cursor
		}
		p, err := a.ListClients(ctx, q)
		if err != nil {
			return nil, nil, err
		}
		return p.Data, p.NextCursor, nil
	})
}

// walk fetches the first page (cursor nil), then each next one by the cursor
// the previous gave, size items a page (nil: iteratePageSize), and yields
// their items. Each range over it walks again from the start.
func walk[T any](size *PageSize, fetch func(size int, cursor *string) ([]T, *string, error)) iter.Seq2[T, error] {
	per := iteratePageSize
	if size != nil {
		per = *size
	}
	return func(yield func(T, error) bool) {
		var cursor *string
		for {
			items, next, err := fetch(per, cursor)
			if err != nil {
				var zero T
				yield(zero, err)
				return
			}
			for _, it := range items {
				if !yield(it, nil) {
					return
				}
			}
			if next == nil || len(items) == 0 {
				return
			}
			cursor = next
		}
	}
}
