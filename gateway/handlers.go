package gateway

import (
	"context"
	"net/http"

	"github.com/julienschmidt/httprouter"

	"github.com/invoicing-ao/gateway/invoicing"
	"github.com/invoicing-ao/gateway/tenants"
)

// The operations of the public API on its resources (the events feed is in
// events.go). Each reads and validates its input,
// makes one store call for the caller's company in the key's mode, and
// returns the resource: writeAnswers writes it, or the error.

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

func (s *Server) listInvoices(r *http.Request, st *reqState, _ httprouter.Params) (answer, error) {
	return list(s, r, st, invoiceFilter, Store.ListInvoices)
}

func (s *Server) getInvoice(r *http.Request, st *reqState, p httprouter.Params) (answer, error) {
	return get(s, r, st, p, Store.GetInvoice)
}

func (s *Server) listClients(r *http.Request, st *reqState, _ httprouter.Params) (answer, error) {
	return list(s, r, st, clientFilter, Store.ListClients)
}

func (s *Server) getClient(r *http.Request, st *reqState, p httprouter.Params) (answer, error) {
	return get(s, r, st, p, Store.GetClient)
}

// list answers a list operation: its filter read from the query string (a
// cursor is read against this company, mode, route and filter), then one
// store call; the next page's cursor is bound to the same.
func list[F, T any](s *Server, r *http.Request, st *reqState, filter func(rawQuery string, read cursorReader) (F, string, error),
	call func(Store, context.Context, string, F) (invoicing.Page[T], error)) (answer, error) {
	sc := cursorScope{company: st.Key.CompanyID, mode: st.Key.Mode, list: st.Route}
	f, key, err := filter(r.URL.RawQuery, func(c, key string) (*invoicing.Position, bool) {
		sc.filter = key
		return s.decodeCursor(c, sc)
	})
	if err != nil {
		return answer{}, err
	}
	sc.filter = key
	return s.read(r, st, func(store Store) (any, error) {
		p, err := call(store, r.Context(), st.Key.CompanyID, f)
		return listPage[T]{Page: p, NextCursor: s.encodeCursor(p.Next, sc)}, err
	})
}

// get answers an operation on one resource, named by the path's id; it takes
// no query parameter.
func get[T any](s *Server, r *http.Request, st *reqState, p httprouter.Params,
	call func(Store, context.Context, string, string) (T, error)) (answer, error) {
	if r.URL.RawQuery != "" {
		if err := parseQuery(r.URL.RawQuery).err(); err != nil {
			return answer{}, err
		}
	}
	ans, err := s.read(r, st, func(store Store) (any, error) { return call(store, r.Context(), st.Key.CompanyID, p.ByName("id")) })
	ans.conditional = true // ETag, and 304 for a copy the caller has
	return ans, err
}

// read runs one database call for the caller's company in the key's mode,
// within the in-flight cap, and answers its result.
func (s *Server) read(r *http.Request, st *reqState, call func(Store) (any, error)) (answer, error) {
	slot, err := s.acquire(r, st)
	if err != nil {
		return answer{}, err
	}
	v, err := call(s.store(st.Key.Mode))
	slot.Release()
	if err != nil {
		return answer{}, err
	}
	return answer{body: v}, nil
}

func (s *Server) acquire(r *http.Request, st *reqState) (tenants.Slot, error) {
	if s.guard == nil {
		return tenants.Slot{}, nil // releasing it does nothing
	}
	return s.guard.Acquire(r.Context(), st.Key.CompanyID)
}
