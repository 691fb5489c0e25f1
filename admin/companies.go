package admin

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/invoicing-ao/gateway/invoicing"
	"github.com/invoicing-ao/gateway/web"
)

// Directory finds the platform's companies by name, NIF or id
// (backend.Store, the live database), for people who know a company by its
// name rather than its id.
type Directory interface {
	SearchCompanies(ctx context.Context, q invoicing.CompanyQuery) ([]invoicing.Company, error)
}

// Companies finds the platform's companies by name, NIF or id, for the
// console's search and the names it shows beside ids.
type Companies struct {
	directory Directory // nil: no live database to read them from
}

// Bounds of the companies' list.
const (
	// MaxCompaniesPage bounds a page of a search.
	MaxCompaniesPage = 100
	// MaxCompanyIDs bounds the ids of one look-up (a page of the console
	// names at most a few dozen companies).
	MaxCompanyIDs = 100
	// maxSearch bounds the text searched for, in bytes.
	maxSearch = 200
)

// CompanyView is a platform company as the admin API shows it.
type CompanyView struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	NIF    string `json:"nif"`
	Status string `json:"status"` // active or suspended
}

// CompaniesView is a page of companies, in name order.
type CompaniesView struct {
	Data []CompanyView `json:"data"`
	// Next is the cursor of the following page; null when this is the last.
	Next *string `json:"next"`
}

// CompanyFind is what FindCompanies looks for.
type CompanyFind struct {
	Search string   // in the name (case-insensitive) or the NIF (spaces ignored); "" for every company
	IDs    []string // those companies only (at most MaxCompanyIDs); nil for any
	Cursor string   // "" for the first page; else a page's Next
	Limit  int      // 1 to MaxCompaniesPage
}

// FindCompanies reads a page of the platform's companies: those whose name
// or NIF holds f.Search, or those of f.IDs (unknown ids are left out).
func (s *Companies) FindCompanies(ctx context.Context, f CompanyFind) (CompaniesView, error) {
	if s.directory == nil {
		return CompaniesView{}, &web.Error{Code: "database_unavailable", Detail: "This instance has no live database to read companies from."}
	}
	var fe []web.FieldError
	if f.Limit < 1 || f.Limit > MaxCompaniesPage {
		fe = append(fe, web.FieldError{Field: "limit", Message: "must be 1 to " + strconv.Itoa(MaxCompaniesPage)})
	}
	if len(f.IDs) > MaxCompanyIDs {
		fe = append(fe, web.FieldError{Field: "ids", Message: "must be at most " + strconv.Itoa(MaxCompanyIDs) + " ids"})
	}
	if len(f.Search) > maxSearch {
		fe = append(fe, web.FieldError{Field: "search", Message: "must be at most " + strconv.Itoa(maxSearch) + " bytes"})
	}
	after, err := decodeCompanyCursor(f.Cursor)
	if err != nil {
		fe = append(fe, web.FieldError{Field: "cursor", Message: "must be a page's next, as answered"})
	}
	if len(fe) > 0 {
		return CompaniesView{}, &web.Error{Code: "invalid_parameter", Detail: "The companies' query is invalid.", Fields: fe}
	}
	// One more than the page: whether there is a next one.
	cs, err := s.directory.SearchCompanies(ctx, invoicing.CompanyQuery{Search: strings.TrimSpace(f.Search), IDs: f.IDs, After: after, Limit: f.Limit + 1})
	if err != nil {
		return CompaniesView{}, err
	}
	v := CompaniesView{Data: make([]CompanyView, 0, len(cs))}
	if len(cs) > f.Limit {
		cs = cs[:f.Limit]
		last := cs[len(cs)-1]
		next := encodeCompanyCursor(invoicing.CompanyPosition{Name: last.Name, ID: last.ID})
		v.Next = &next
	}
	for _, c := range cs {
		v.Data = append(v.Data, CompanyView{ID: c.ID, Name: c.Name, NIF: c.NIF, Status: c.Status})
	}
	return v, nil
}

// errBadCursor is a cursor that no page answered.
var errBadCursor = errors.New("admin: malformed cursor")

// A cursor is the last company of a page, opaque to callers.
func encodeCompanyCursor(p invoicing.CompanyPosition) string {
	b, _ := json.Marshal([]string{p.Name, p.ID}) // strings cannot fail
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeCompanyCursor(c string) (*invoicing.CompanyPosition, error) {
	if c == "" {
		return nil, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return nil, err
	}
	var p []string
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, err
	}
	if len(p) != 2 {
		return nil, errBadCursor
	}
	if _, ok := invoicing.CanonicalUUID(p[1]); !ok {
		return nil, errBadCursor
	}
	return &invoicing.CompanyPosition{Name: p[0], ID: p[1]}, nil
}

// adminCompanies: GET /admin/v1/companies?search=TEXT&limit=N&cursor=C, or
// ?ids=ID,ID,... for the names of companies known by id.
func (s *Companies) adminCompanies(r *http.Request, _ web.Params) (web.Answer, error) {
	q := web.ParseQuery(r.URL.RawQuery, "search", "ids", "limit", "cursor")
	f := CompanyFind{Limit: q.Int("limit", 20, 1, MaxCompaniesPage)}
	f.Search, _ = q.Get("search")
	f.Cursor, _ = q.Get("cursor")
	if ids, ok := q.Get("ids"); ok {
		f.IDs = []string{}
		for id := range strings.SplitSeq(ids, ",") {
			if id = strings.TrimSpace(id); id != "" {
				f.IDs = append(f.IDs, id)
			}
		}
		if _, given := q.Get("limit"); !given {
			f.Limit = MaxCompaniesPage // every company asked for
		}
	}
	if err := q.Err(); err != nil {
		return web.Answer{}, err
	}
	return result(s.FindCompanies(r.Context(), f))
}
