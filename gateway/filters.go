package gateway

import (
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/invoicing-ao/gateway/invoicing"
	"github.com/invoicing-ao/gateway/web"
)

// The lists' filters, read from their query strings (web.Query): the
// parameters of gateway/apidocs/openapi.yaml, each judged by its rules.

// Page defaults and bounds (the page and pageSize parameters of
// gateway/apidocs/openapi.yaml; the defaults and the answer to an oversized
// pageSize are this gateway's decisions: docs/integrators.md).
const (
	defaultPageSize = 20
	maxPageSize     = 100
	maxPage         = 1_000_000 // beyond this, offsets would only burn the database
	maxSearchLen    = 100
)

// enumParam parses an optional value from a closed list (exact, upper case as
// gateway/apidocs/openapi.yaml writes them).
func enumParam(q *web.Query, name string, allowed ...string) string {
	s, ok := q.Get(name)
	if !ok {
		return ""
	}
	if !slices.Contains(allowed, s) {
		q.Fail(name, "must be one of "+strings.Join(allowed, ", "))
		return ""
	}
	return s
}

// dateParam parses an optional calendar date YYYY-MM-DD.
func dateParam(q *web.Query, name string) string {
	s, ok := q.Get(name)
	if !ok {
		return ""
	}
	if _, err := time.Parse("2006-01-02", s); err != nil || len(s) != 10 {
		q.Fail(name, "must be a date YYYY-MM-DD")
		return ""
	}
	return s
}

// pageParams reads page and pageSize.
func pageParams(q *web.Query) (page, size int) {
	return q.Int("page", 1, 1, maxPage), q.Int("pageSize", defaultPageSize, 1, maxPageSize)
}

// searchParam is free text, trimmed, bounded, valid UTF-8 without control
// characters; it is data for a bound SQL parameter, never SQL.
func searchParam(q *web.Query, name string) string {
	s, ok := q.Get(name)
	if !ok {
		return ""
	}
	s = strings.TrimSpace(s)
	switch {
	case !utf8.ValidString(s) || hasControl(s):
		q.Fail(name, "must be text without control characters")
		return ""
	case utf8.RuneCountInString(s) > maxSearchLen:
		q.Fail(name, "must be at most "+strconv.Itoa(maxSearchLen)+" characters")
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
func listParams(q *web.Query, filters string, read cursorReader) (page, size int, after *invoicing.Position, since *time.Time, bound string) {
	page, size = pageParams(q)
	if s, ok := q.Get("updatedSince"); ok {
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			q.Fail("updatedSince", "must be an RFC 3339 date and time, e.g. 2026-03-01T09:00:00Z")
		} else {
			since = &t
		}
	}
	bound = withSince(filters, since)
	c, ok := q.Get("cursor")
	if !ok {
		return page, size, nil, since, bound
	}
	if _, paged := q.Get("page"); paged {
		q.Fail("cursor", "cannot be combined with page: a cursor says where the page starts")
		return page, size, nil, since, bound
	}
	if after, ok = read(c, bound); !ok {
		q.Fail("cursor", "is not a cursor of this list: use nextCursor as returned, with the same filters, company and key mode")
	}
	return 1, size, after, since, bound
}

// invoiceFilter reads the query of GET /invoices; the filter's canonical
// form is returned for the next page's cursor.
func invoiceFilter(raw string, read cursorReader) (invoicing.InvoiceFilter, string, error) {
	q := web.ParseQuery(raw, "page", "pageSize", "cursor", "status", "type", "from", "to", "updatedSince")
	var f invoicing.InvoiceFilter
	f.Status = enumParam(q, "status", invoiceStatuses...)
	f.Type = enumParam(q, "type", invoiceTypes...)
	f.From, f.To = dateParam(q, "from"), dateParam(q, "to")
	if f.From != "" && f.To != "" && f.From > f.To {
		q.Fail("to", "must not be before from")
	}
	var key string
	f.Page, f.PageSize, f.After, f.UpdatedSince, key = listParams(q, "status="+f.Status+"&type="+f.Type+"&from="+f.From+"&to="+f.To, read)
	return f, key, q.Err()
}

// clientFilter reads the query of GET /clients, as invoiceFilter.
func clientFilter(raw string, read cursorReader) (invoicing.ClientFilter, string, error) {
	q := web.ParseQuery(raw, "page", "pageSize", "cursor", "search", "updatedSince")
	var f invoicing.ClientFilter
	f.Search = searchParam(q, "search")
	var key string
	f.Page, f.PageSize, f.After, f.UpdatedSince, key = listParams(q, "search="+url.QueryEscape(f.Search), read)
	return f, key, q.Err()
}

// withSince adds updatedSince to a filter's canonical form: it changes the
// list's order, so a cursor of one is never one of the other.
func withSince(key string, since *time.Time) string {
	if since == nil {
		return key
	}
	return key + "&updatedSince=" + since.UTC().Format(time.RFC3339Nano)
}
