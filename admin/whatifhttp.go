package admin

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/invoicing-ao/gateway/web"
)

// The admin API of what-if, shape and headroom (whatif.go, shape.go): GET
// routes whose query says the mode, the window and the proposed limit.
// Every parameter at fault is named in one answer, those the query's form
// refuses (not a number, missing) and those the operation refuses (out of
// range) alike.

// defaultWindow is how far back a what-if or shape query looks unless told.
const defaultWindow = 24 * time.Hour

// query is a query string as the HTTP layer reads it (web.ParseQuery):
// unknown and repeated parameters already failed.
type query interface {
	Get(name string) (string, bool)
	Fail(field, msg string)
	Err() error
}

// shapeQuery is a what-if, shape or headroom query string being read, each
// parameter failed at most once.
type shapeQuery struct {
	query
	failed map[string]bool
}

func readShapeQuery(r *http.Request, known ...string) *shapeQuery {
	return &shapeQuery{query: web.ParseQuery(r.URL.RawQuery, known...), failed: map[string]bool{}}
}

func (q *shapeQuery) fail(field, msg string) {
	if !q.failed[field] {
		q.failed[field] = true
		q.Fail(field, msg)
	}
}

// text is a parameter's value; a required one missing is a failure.
func (q *shapeQuery) text(name string, required bool) (string, bool) {
	v, ok := q.Get(name)
	if !ok && required {
		q.fail(name, "is required")
	}
	return v, ok
}

// number reads a finite number; def when it is not given and not required.
func (q *shapeQuery) number(name string, def float64, required bool, what string) float64 {
	v, ok := q.text(name, required)
	if !ok {
		return def
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		q.fail(name, "must be "+what)
		return def
	}
	return f
}

// integer reads a whole number; def when it is not given and not required.
func (q *shapeQuery) integer(name string, def int, required bool) int {
	v, ok := q.text(name, required)
	if !ok {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		q.fail(name, "must be a whole number")
		return def
	}
	return n
}

// since reads the window's start: an RFC 3339 time, a date (UTC) or a
// duration ago (90m, 24h, 7d), as the command line's --since; defaultWindow
// ago when it is not given. A duration is counted from the gateway's clock,
// so a console whose clock is off still asks for the window it means.
func (q *shapeQuery) since(now time.Time) time.Time {
	v, ok := q.text("since", false)
	if !ok {
		return now.Add(-defaultWindow)
	}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t
	}
	if t, err := time.Parse(time.DateOnly, v); err == nil {
		return t
	}
	d, err := time.ParseDuration(v)
	if days, isDays := strings.CutSuffix(v, "d"); isDays {
		var n int
		n, err = strconv.Atoi(days)
		d = time.Duration(n) * 24 * time.Hour
	}
	if err != nil || d <= 0 {
		q.fail("since", "must be an RFC 3339 time, a date (YYYY-MM-DD) or a duration ago (24h, 7d), within the last 30 days")
		return now.Add(-defaultWindow)
	}
	return now.Add(-d)
}

// err is the invalid_parameter error of every failure: the query's, then
// the operation's (fe) for the parameters the query did not already fail.
func (q *shapeQuery) err(fe []web.FieldError) error {
	for _, f := range fe {
		q.fail(f.Field, f.Message)
	}
	return q.Err()
}

func (s *Limits) adminWhatIf(r *http.Request, p web.Params) (web.Answer, error) {
	q := readShapeQuery(r, "mode", "rate", "burst", "since", "maxRefused")
	wq := WhatIfQuery{CompanyID: p.ByName("id")}
	now := s.now() // once: "30d" is then exactly 30 days before the check's now
	wq.Mode, _ = q.text("mode", true)
	wq.Rate = q.number("rate", 1, true, "a number of requests per second")
	wq.Burst = q.integer("burst", 1, true)
	wq.Since = q.since(now)
	wq.MaxRefused = q.number("maxRefused", DefaultMaxRefused, false, "a share from 0 to below 1")
	_, fe := s.whatIfFields(wq, now)
	if err := q.err(fe); err != nil {
		return web.Answer{}, err
	}
	return result(s.WhatIf(r.Context(), wq))
}

func (s *Limits) adminShape(r *http.Request, p web.Params) (web.Answer, error) {
	q := readShapeQuery(r, "mode", "since")
	mode, _ := q.text("mode", true)
	now := s.now()
	since := q.since(now)
	_, fe := shapeFields(mode, since, now)
	if err := q.err(fe); err != nil {
		return web.Answer{}, err
	}
	return result(s.TrafficShape(r.Context(), p.ByName("id"), mode, since))
}

func (s *Limits) adminHeadroom(r *http.Request, _ web.Params) (web.Answer, error) {
	q := readShapeQuery(r, "mode", "top")
	mode, ok := q.text("mode", false)
	if !ok {
		mode = "LIVE"
	}
	top := q.integer("top", 10, false)
	_, fe := shapeFields(mode, time.Unix(0, 0), time.Unix(3600, 0)) // the mode only
	if top < 1 || top > 100 {
		fe = append(fe, web.FieldError{Field: "top", Message: "must be 1 to 100"})
	}
	if err := q.err(fe); err != nil {
		return web.Answer{}, err
	}
	return result(s.LimitHeadroom(r.Context(), mode, top))
}
