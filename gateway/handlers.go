package gateway

import (
	"context"
	"net/http"

	"github.com/invoicing-ao/gateway/invoicing"
	"github.com/invoicing-ao/gateway/tenants"
	"github.com/invoicing-ao/gateway/web"
)

// The operations of the public API on its resources (the events feed is in
// events.go). Each reads and validates its input,
// makes one store call for the caller's company in the key's mode, and
// returns the resource: web writes it (by encode.go's appenders), or the
// error.

// Store is one database's worth of API resources (backend.Store): the
// operations below, one method each.
type Store interface {
	Company(ctx context.Context, id string) (invoicing.Company, error)
	ListInvoices(ctx context.Context, companyID string, f invoicing.InvoiceFilter) (invoicing.Page[invoicing.Invoice], error)
	GetInvoice(ctx context.Context, companyID, id string) (invoicing.Invoice, error)
	ListClients(ctx context.Context, companyID string, f invoicing.ClientFilter) (invoicing.Page[invoicing.Client], error)
	GetClient(ctx context.Context, companyID, id string) (invoicing.Client, error)
	CreateClient(ctx context.Context, companyID string, c invoicing.NewClient) (invoicing.Client, error)
	Ping(ctx context.Context) error
}

func (s *Server) listInvoices(r *http.Request, c apiCall, _ web.Params) (web.Answer, error) {
	return list(s, r, c, invoiceFilter, Store.ListInvoices)
}

func (s *Server) getInvoice(r *http.Request, c apiCall, p web.Params) (web.Answer, error) {
	return get(s, r, c, p, Store.GetInvoice)
}

func (s *Server) listClients(r *http.Request, c apiCall, _ web.Params) (web.Answer, error) {
	return list(s, r, c, clientFilter, Store.ListClients)
}

func (s *Server) getClient(r *http.Request, c apiCall, p web.Params) (web.Answer, error) {
	return get(s, r, c, p, Store.GetClient)
}

// list answers a list operation: its filter read from the query string (a
// cursor is read against this company, mode, route and filter), then one
// store call; the next page's cursor is bound to the same.
func list[F, T any](s *Server, r *http.Request, c apiCall, filter func(rawQuery string, read cursorReader) (F, string, error),
	call func(Store, context.Context, string, F) (invoicing.Page[T], error)) (web.Answer, error) {
	sc := cursorScope{company: c.company, mode: c.mode, list: c.st.Route()}
	kr, err := s.cursorKeys(r.Context())
	if err != nil {
		return web.Answer{}, err
	}
	f, key, err := filter(r.URL.RawQuery, func(cursor, key string) (*invoicing.Position, bool) {
		sc.filter = key
		return kr.decodeCursor(cursor, sc)
	})
	if err != nil {
		return web.Answer{}, err
	}
	sc.filter = key
	return s.read(r, c, func(store Store) (any, error) {
		p, err := call(store, r.Context(), c.company, f)
		return listPage[T]{Page: p, NextCursor: kr.encodeCursor(p.Next, sc)}, err
	})
}

// get answers an operation on one resource, named by the path's id; it takes
// no query parameter.
func get[T any](s *Server, r *http.Request, c apiCall, p web.Params,
	call func(Store, context.Context, string, string) (T, error)) (web.Answer, error) {
	if r.URL.RawQuery != "" {
		if err := web.ParseQuery(r.URL.RawQuery).Err(); err != nil {
			return web.Answer{}, err
		}
	}
	ans, err := s.read(r, c, func(store Store) (any, error) { return call(store, r.Context(), c.company, p.ByName("id")) })
	ans.Conditional = true // ETag, and 304 for a copy the caller has
	return ans, err
}

// read runs one database call for the caller's company in the key's mode,
// within the in-flight cap, and answers its result.
func (s *Server) read(r *http.Request, c apiCall, call func(Store) (any, error)) (web.Answer, error) {
	slot, err := s.acquire(r, c)
	if err != nil {
		return web.Answer{}, err
	}
	v, err := call(s.store(c.mode))
	slot.Release()
	if err != nil {
		return web.Answer{}, err
	}
	return web.Answer{Body: v}, nil
}

func (s *Server) acquire(r *http.Request, c apiCall) (tenants.Slot, error) {
	if s.guard == nil {
		return tenants.Slot{}, nil // releasing it does nothing
	}
	return s.guard.Acquire(r.Context(), c.company)
}
