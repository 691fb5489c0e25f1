package gateway

import (
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/invoicing-ao/gateway/invoicing"
)

// Page defaults and bounds (the page and pageSize parameters of
// gateway/apidocs/openapi.yaml; the defaults and the answer to an oversized
// pageSize are this gateway's decisions: docs/integrators.md).
const (
	defaultPageSize = 20
	maxPageSize     = 100
	maxPage         = 1_000_000 // beyond this, offsets would only burn the database
	maxSearchLen    = 100
	maxQueryLen     = 2048
)

// query reads a request's query string strictly: every parameter must be
// known and given once, so a typo (pagesize=5) is an error, not a silent
// default. It parses as url.ParseQuery does, into a small array instead of a
// map: the query is on every request's path.
type query struct {
	pairs []queryPair
	buf   [8]queryPair
	errs  []FieldError
}

type queryPair struct{ name, value string }

func parseQuery(raw string, known ...string) *query {
	q := &query{}
	if len(raw) > maxQueryLen {
		q.errs = append(q.errs, FieldError{"query", "is longer than " + strconv.Itoa(maxQueryLen) + " bytes"})
		return q
	}
	q.pairs = q.buf[:0]
	for rest := raw; rest != ""; {
		var piece string
		piece, rest, _ = strings.Cut(rest, "&")
		if strings.Contains(piece, ";") {
			q.errs = append(q.errs, FieldError{"query", "is not a valid URL query string"})
			return q
		}
		if piece == "" {
			continue
		}
		name, value, _ := strings.Cut(piece, "=")
		var err1, err2 error
		if name, err1 = url.QueryUnescape(name); err1 == nil {
			value, err2 = url.QueryUnescape(value)
		}
		if err1 != nil || err2 != nil {
			q.errs = append(q.errs, FieldError{"query", "is not a valid URL query string"})
			return q
		}
		q.pairs = append(q.pairs, queryPair{name, value})
	}
	if len(q.pairs) == 0 {
		return q
	}
	// Judge each distinct name once, in name order, as the API documents.
	var nbuf [8]string
	names := nbuf[:0]
	for _, p := range q.pairs {
		if !contains(names, p.name) {
			names = append(names, p.name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		if !contains(known, name) {
			q.errs = append(q.errs, FieldError{name, "is not a known parameter; known: " + strings.Join(known, ", ")})
		} else if q.count(name) > 1 {
			q.errs = append(q.errs, FieldError{name, "is given more than once"})
		}
	}
	return q
}

func (q *query) count(name string) int {
	n := 0
	for _, p := range q.pairs {
		if p.name == name {
			n++
		}
	}
	return n
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// get returns a parameter's value and whether it was given (an empty value
// counts as given, and is then judged by the caller's rules).
func (q *query) get(name string) (string, bool) {
	for _, p := range q.pairs {
		if p.name == name {
			return p.value, true
		}
	}
	return "", false
}

func (q *query) fail(field, msg string) { q.errs = append(q.errs, FieldError{field, msg}) }

// intParam parses an optional integer in [lo, hi].
func (q *query) intParam(name string, def, lo, hi int) int {
	s, ok := q.get(name)
	if !ok {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < lo || n > hi {
		q.fail(name, "must be an integer from "+strconv.Itoa(lo)+" to "+strconv.Itoa(hi))
		return def
	}
	return n
}

// enumParam parses an optional value from a closed list (exact, upper case as
// gateway/apidocs/openapi.yaml writes them).
func (q *query) enumParam(name string, allowed ...string) string {
	s, ok := q.get(name)
	if !ok {
		return ""
	}
	if !contains(allowed, s) {
		q.fail(name, "must be one of "+strings.Join(allowed, ", "))
		return ""
	}
	return s
}

// dateParam parses an optional calendar date YYYY-MM-DD.
func (q *query) dateParam(name string) string {
	s, ok := q.get(name)
	if !ok {
		return ""
	}
	if _, err := time.Parse("2006-01-02", s); err != nil || len(s) != 10 {
		q.fail(name, "must be a date YYYY-MM-DD")
		return ""
	}
	return s
}

func (q *query) page() (page, size int) {
	return q.intParam("page", 1, 1, maxPage), q.intParam("pageSize", defaultPageSize, 1, maxPageSize)
}

// err is the accumulated validation error, or nil.
func (q *query) err() error {
	if len(q.errs) == 0 {
		return nil
	}
	return &Error{Code: "invalid_parameter", Detail: "One or more query parameters are invalid.", Fields: q.errs}
}

// searchParam is free text, trimmed, bounded, valid UTF-8 without control
// characters; it is data for a bound SQL parameter, never SQL.
func (q *query) searchParam(name string) string {
	s, ok := q.get(name)
	if !ok {
		return ""
	}
	s = strings.TrimSpace(s)
	switch {
	case !utf8.ValidString(s) || hasControl(s):
		q.fail(name, "must be text without control characters")
		return ""
	case utf8.RuneCountInString(s) > maxSearchLen:
		q.fail(name, "must be at most "+strconv.Itoa(maxSearchLen)+" characters")
		return ""
	}
	return s
}

// hasControl reports C0 and C1 control characters: C1 ones (U+0080-U+009F)
// include CSI, which terminals read as the start of an escape sequence.
func hasControl(s string) bool {
	for _, r := range s {
		if unicode.IsControl(r) {
			return true
		}
	}
	return false
}

var (
	invoiceStatuses = []string{"DRAFT", "ISSUED", "PAID", "CANCELLED", "OVERDUE"}
	invoiceTypes    = []string{"FT", "FR", "FS", "NC", "ND", "PF"}
)

// cursorReader turns a cursor into a position of the list whose filter has
// the canonical form key; false when it is not a cursor of that list.
type cursorReader func(cursor, key string) (*invoicing.Position, bool)

// listParams reads what every list takes: page and pageSize, or cursor (and
// pageSize), and updatedSince. filters is the canonical form of the list's
// other filters; bound, returned, adds updatedSince to it: the form a cursor
// is bound to.
func (q *query) listParams(filters string, read cursorReader) (page, size int, after *invoicing.Position, since *time.Time, bound string) {
	page, size = q.page()
	if s, ok := q.get("updatedSince"); ok {
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			q.fail("updatedSince", "must be an RFC 3339 date and time, e.g. 2026-03-01T09:00:00Z")
		} else {
			since = &t
		}
	}
	bound = withSince(filters, since)
	c, ok := q.get("cursor")
	if !ok {
		return page, size, nil, since, bound
	}
	if _, paged := q.get("page"); paged {
		q.fail("cursor", "cannot be combined with page: a cursor says where the page starts")
		return page, size, nil, since, bound
	}
	if after, ok = read(c, bound); !ok {
		q.fail("cursor", "is not a cursor of this list: use nextCursor as returned, with the same filters, company and key mode")
	}
	return 1, size, after, since, bound
}

// invoiceFilter reads the query of GET /invoices; the filter's canonical
// form is returned for the next page's cursor.
func invoiceFilter(raw string, read cursorReader) (invoicing.InvoiceFilter, string, error) {
	q := parseQuery(raw, "page", "pageSize", "cursor", "status", "type", "from", "to", "updatedSince")
	var f invoicing.InvoiceFilter
	f.Status = q.enumParam("status", invoiceStatuses...)
	f.Type = q.enumParam("type", invoiceTypes...)
	f.From, f.To = q.dateParam("from"), q.dateParam("to")
	if f.From != "" && f.To != "" && f.From > f.To {
		q.fail("to", "must not be before from")
	}
	var key string
	f.Page, f.PageSize, f.After, f.UpdatedSince, key = q.listParams("status="+f.Status+"&type="+f.Type+"&from="+f.From+"&to="+f.To, read)
	return f, key, q.err()
}

// clientFilter reads the query of GET /clients, as invoiceFilter.
func clientFilter(raw string, read cursorReader) (invoicing.ClientFilter, string, error) {
	q := parseQuery(raw, "page", "pageSize", "cursor", "search", "updatedSince")
	var f invoicing.ClientFilter
	f.Search = q.searchParam("search")
	var key string
	f.Page, f.PageSize, f.After, f.UpdatedSince, key = q.listParams("search="+url.QueryEscape(f.Search), read)
	return f, key, q.err()
}

// withSince adds updatedSince to a filter's canonical form: it changes the
// list's order, so a cursor of one is never one of the other.
func withSince(key string, since *time.Time) string {
	if since == nil {
		return key
	}
	return key + "&updatedSince=" + since.UTC().Format(time.RFC3339Nano)
}
