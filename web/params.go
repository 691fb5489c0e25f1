package web

import (
	"net/url"
	"sort"
	"strconv"
	"strings"
)

// MaxQueryLen bounds a query string (bytes): no list's filters need more.
const MaxQueryLen = 2048

// Query is a request's query string read strictly: every parameter must be
// known and given once, so a typo (pagesize=5) is an error, not a silent
// default. It parses as url.ParseQuery does, into a small array instead of a
// map: the query is on every request's path.
type Query struct {
	pairs []queryPair
	buf   [8]queryPair
	errs  []FieldError
}

type queryPair struct{ name, value string }

// ParseQuery reads raw (URL.RawQuery) against the known parameters; the
// failures it finds (and those the caller adds with Fail) are Err's.
func ParseQuery(raw string, known ...string) *Query {
	q := &Query{}
	if len(raw) > MaxQueryLen {
		q.errs = append(q.errs, FieldError{"query", "is longer than " + strconv.Itoa(MaxQueryLen) + " bytes"})
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

func (q *Query) count(name string) int {
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

// Get returns a parameter's value and whether it was given (an empty value
// counts as given, and is then judged by the caller's rules).
func (q *Query) Get(name string) (string, bool) {
	for _, p := range q.pairs {
		if p.name == name {
			return p.value, true
		}
	}
	return "", false
}

// Fail records that field is invalid, and why.
func (q *Query) Fail(field, msg string) { q.errs = append(q.errs, FieldError{field, msg}) }

// Int reads an optional integer in [lo, hi]: def when it is not given, and
// a failure recorded when it is out of range.
func (q *Query) Int(name string, def, lo, hi int) int {
	s, ok := q.Get(name)
	if !ok {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < lo || n > hi {
		q.Fail(name, "must be an integer from "+strconv.Itoa(lo)+" to "+strconv.Itoa(hi))
		return def
	}
	return n
}

// Err is the invalid_parameter error of every failure recorded, or nil.
func (q *Query) Err() error {
	if len(q.errs) == 0 {
		return nil
	}
	return &Error{Code: "invalid_parameter", Detail: "One or more query parameters are invalid.", Fields: q.errs}
}
