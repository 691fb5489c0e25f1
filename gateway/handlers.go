package gateway

import (
	"net/http"
	"strconv"

	"github.com/julienschmidt/httprouter"
)

func (s *Server) listInvoices(w http.ResponseWriter, r *http.Request, st *reqState, _ httprouter.Params) {
	f, err := invoiceFilter(r.URL.RawQuery)
	if err != nil {
		writeProblem(w, r, err)
		return
	}
	s.withData(w, r, st, func(store Store) (any, error) {
		return store.ListInvoices(r.Context(), st.Key.CompanyID, f)
	}, http.StatusOK)
}

func (s *Server) getInvoice(w http.ResponseWriter, r *http.Request, st *reqState, p httprouter.Params) {
	if err := parseQuery(r.URL.RawQuery).err(); err != nil {
		writeProblem(w, r, err)
		return
	}
	id := p.ByName("id")
	s.withData(w, r, st, func(store Store) (any, error) {
		return store.GetInvoice(r.Context(), st.Key.CompanyID, id)
	}, http.StatusOK)
}

func (s *Server) listClients(w http.ResponseWriter, r *http.Request, st *reqState, _ httprouter.Params) {
	f, err := clientFilter(r.URL.RawQuery)
	if err != nil {
		writeProblem(w, r, err)
		return
	}
	s.withData(w, r, st, func(store Store) (any, error) {
		return store.ListClients(r.Context(), st.Key.CompanyID, f)
	}, http.StatusOK)
}

func (s *Server) getClient(w http.ResponseWriter, r *http.Request, st *reqState, p httprouter.Params) {
	if err := parseQuery(r.URL.RawQuery).err(); err != nil {
		writeProblem(w, r, err)
		return
	}
	id := p.ByName("id")
	s.withData(w, r, st, func(store Store) (any, error) {
		return store.GetClient(r.Context(), st.Key.CompanyID, id)
	}, http.StatusOK)
}

func (s *Server) createClient(w http.ResponseWriter, r *http.Request, st *reqState, _ httprouter.Params) {
	if err := parseQuery(r.URL.RawQuery).err(); err != nil {
		writeProblem(w, r, err)
		return
	}
	nc, err := decodeNewClient(w, r)
	if err != nil {
		writeProblem(w, r, err)
		return
	}
	release, err := s.acquire(r, st)
	if err != nil {
		writeProblem(w, r, err)
		return
	}
	defer release()
	c, err := s.store(st.Key.Mode).CreateClient(r.Context(), st.Key.CompanyID, nc)
	if err != nil {
		writeProblem(w, r, err)
		return
	}
	w.Header().Set("Location", apiPrefix+"/clients/"+c.ID)
	writeJSON(w, http.StatusCreated, c)
}

// withData runs one database call for the caller's company in the key's
// mode, within the in-flight cap, and writes its result or its error.
func (s *Server) withData(w http.ResponseWriter, r *http.Request, st *reqState, call func(Store) (any, error), status int) {
	release, err := s.acquire(r, st)
	if err != nil {
		writeProblem(w, r, err)
		return
	}
	v, err := call(s.store(st.Key.Mode))
	release()
	if err != nil {
		writeProblem(w, r, err)
		return
	}
	writeJSON(w, status, v)
}

func (s *Server) acquire(r *http.Request, st *reqState) (func(), error) {
	if s.guard == nil {
		return func() {}, nil
	}
	return s.guard.Acquire(r.Context(), st.Key.CompanyID)
}

// writeJSON writes v as the response body with an exact Content-Length.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, buf, err := marshalJSON(v) // encode.go
	if err != nil {
		// Resources always encode; should one not, the caller still gets
		// the API's error format.
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write([]byte(`{"type":"` + problemTypeBase + `internal_error","title":"Internal server error","status":500,"detail":"An internal error occurred.","code":"internal_error"}` + "\n"))
		return
	}
	defer releaseBuf(buf)
	h := w.Header()
	h["Content-Type"] = jsonContentType
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// jsonContentType is shared by every answer, as the values in middleware.go.
var jsonContentType = []string{"application/json"}
