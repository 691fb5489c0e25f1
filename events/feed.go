package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/invoicing-ao/gateway/invoicing"
)

// The events feed: every event, for every company (whether or not it has
// endpoints), recorded per company and mode in the order detection finds
// them, kept Config.FeedWindow, and read by the API's GET /events. It is
// how a receiver without a public address gets its events, and how one
// that was down fills the gap.
//
// A feed is a Redis stream, P{events}:feed:<mode>:<company>, one entry per
// event: its id (i), type (t) and webhook body (b). The stream's entry ids,
// which Redis makes from its clock and which only grow, are the feed's
// order and its cursors' positions: an event is visible from the moment
// its entry exists, and every entry made later has a greater id, so a
// walk oldest first by position never misses one recorded behind it (an
// event's own timestamp, the change's time, would: detection records late
// changes, the sweep's and a backlog's, after earlier-recorded later ones).
// Feed markers (fseen:, as markers.go's, in their own sets) keep a change
// read twice from being recorded twice. Trimming, as events are recorded
// and on the sweep's tick, drops what was recorded before the window and
// remembers the last entry dropped (fcut:<mode>, by company): an
// oldest-first cursor before it is refused rather than silently skipping.
//
// Cost: detection reads every company's changes (indexes on the change
// times across companies: backend/schema/indexes.sql), and Redis keeps each
// event's body once more (docs/performance.md has the bytes per event).

// defaultFeedScan is how many events a page with a type filter reads at
// most before it answers, short, with a cursor to continue from.
const defaultFeedScan = 2000

// ErrInvalidFeedQuery is a refused feed query: the parameter, named, and why.
var ErrInvalidFeedQuery = invoicing.Define(invoicing.Error{Kind: invoicing.Invalid, Code: "invalid_parameter", Title: "Invalid query parameter", Message: "invalid events feed query"})

func (l layout) feed(m invoicing.Mode, company string) string {
	return l.p + "feed:" + string(m) + ":" + company
}
func (l layout) feedCut(m invoicing.Mode) string { return l.p + "fcut:" + string(m) }
func (l layout) feeds(m invoicing.Mode) string   { return l.p + "feeds:" + string(m) }

// feedOn reports whether the feed records events (FeedWindow not negative):
// detection then reads every company, not only those with endpoints.
func (b *base) feedOn() bool { return b.feedWindow > 0 }

// reads reports whether detection reads the database for t: for every
// company with the feed on, else for the companies with endpoints.
func (b *base) reads(t *targets) bool { return b.feedOn() || len(t.companies) > 0 }

// FeedWindow is how long the feed keeps an event; 0 when it is off.
func (b *base) FeedWindow() time.Duration { return max(b.feedWindow, 0) }

// EventTypes names every event type, as the feed's type filter takes them.
func (s *Service) EventTypes() []string {
	out := make([]string, len(Types))
	for i, t := range Types {
		out[i] = string(t)
	}
	return out
}

// feedArgs are an event's arguments to the enqueue script's feed part: its
// mode and company, and its webhook body ("" with the feed off).
func (b *base) feedArgs(ev *Event) (string, string, string, error) {
	if !b.feedOn() {
		return "", "", "", nil
	}
	body, err := ev.body()
	return string(ev.Mode), ev.CompanyID, string(body), err
}

// ReadFeed reads a page of a company's feed in a mode.
func (s *Service) ReadFeed(ctx context.Context, q invoicing.FeedQuery) (invoicing.FeedPage, error) {
	if !s.feedOn() {
		return invoicing.FeedPage{}, fmt.Errorf("%w: the events feed is off", ErrUnavailable)
	}
	if q.Limit < 1 || q.Limit > 100 {
		return invoicing.FeedPage{}, invoicing.InvalidField(ErrInvalidFeedQuery, "pageSize", "must be an integer from 1 to 100")
	}
	for _, t := range q.Types {
		if !slices.Contains(Types, Type(t)) {
			return invoicing.FeedPage{}, invoicing.InvalidField(ErrInvalidFeedQuery, "type", "must be event types among %s: %q is not one", typeList(), invoicing.Clip(t))
		}
	}
	order, after, lo, hi := "asc", "", "-", "+"
	if q.Newest {
		order = "desc"
	}
	if q.After != nil {
		after = feedPos(*q.After)
	}
	if q.Since != nil {
		lo = strconv.FormatInt(max(q.Since.UnixMilli(), 0), 10) + "-0"
	}
	if q.Until != nil {
		hi = "(" + strconv.FormatInt(max(q.Until.UnixMilli(), 0), 10) + "-0"
	}
	if emptyRange(q, hi) {
		return s.feedPage(ctx, q, "", false, nil)
	}
	args := []any{order, after, lo, hi, q.Limit, max(defaultFeedScan, q.Limit), q.CompanyID}
	for _, t := range q.Types {
		args = append(args, t)
	}
	res, err := readFeedScript.Run(ctx, s.rdb, []string{s.l.feed(q.Mode, q.CompanyID), s.l.feedCut(q.Mode)}, args...).StringSlice()
	if err != nil {
		return invoicing.FeedPage{}, unavailable(err)
	}
	if len(res) >= 2 && res[0] == "expired" {
		return invoicing.FeedPage{}, invoicing.InvalidField(ErrInvalidFeedQuery, "cursor",
			"is older than the feed's window (%s): events after it were dropped; start again without a cursor, and sync what changed meanwhile with updatedSince", s.feedWindow)
	}
	if len(res) < 3 || res[0] != "ok" || (len(res)-3)%3 != 0 {
		return invoicing.FeedPage{}, errors.New("events: the feed's script answered an unexpected reply")
	}
	return s.feedPage(ctx, q, res[1], res[2] == "1", res[3:])
}

// emptyRange reports whether q's walk holds no position at all: before the
// very first (until at or before 1970, a cursor at 0-0 newest first) or
// after the very last (a cursor at the greatest id, oldest first). Redis
// refuses such a range ("invalid end ID") rather than answer it empty;
// a cursor holds any position its MAC allows, so these are read as the
// empty pages they are.
func emptyRange(q invoicing.FeedQuery, hi string) bool {
	if hi == "(0-0" {
		return true
	}
	if q.After == nil {
		return false
	}
	if q.Newest {
		return q.After.Ms == 0 && q.After.Seq == 0
	}
	return q.After.Ms == math.MaxUint64 && q.After.Seq == math.MaxUint64
}

// feedPage makes the page from the script's reply: each event as the
// webhook body's object with its id and recording time first.
func (s *Service) feedPage(ctx context.Context, q invoicing.FeedQuery, last string, more bool, rows []string) (invoicing.FeedPage, error) {
	p := invoicing.FeedPage{Events: make([]json.RawMessage, 0, len(rows)/3), HasMore: more}
	for i := 0; i+2 < len(rows); i += 3 {
		pos, ok := parsePosition(rows[i])
		body := rows[i+2]
		if !ok || len(body) < 2 || body[0] != '{' {
			return invoicing.FeedPage{}, errors.New("events: a feed entry is malformed")
		}
		item := make([]byte, 0, len(body)+80)
		item = append(item, `{"id":`...)
		item = strconv.AppendQuote(item, rows[i+1])
		item = append(item, `,"recordedAt":"`...)
		item = time.UnixMilli(int64(pos.Ms)).UTC().AppendFormat(item, "2006-01-02T15:04:05.000Z")
		item = append(item, '"')
		if body != "{}" {
			item = append(item, ',')
		}
		item = append(item, body[1:]...)
		p.Events = append(p.Events, item)
	}
	switch pos, ok := parsePosition(last); {
	case ok:
		p.Next = &pos
	case q.After != nil:
		p.Next = q.After // nothing read: ask again from where this began
	case !q.Newest:
		// A first read that found nothing: from the last event dropped,
		// or the start, so that a poller's next read finds what comes.
		start, err := s.feedStart(ctx, q)
		if err != nil {
			return invoicing.FeedPage{}, err
		}
		p.Next = &start
	}
	if q.Newest && !more {
		p.Next = nil // the oldest was reached
	}
	return p, nil
}

// feedStart is the position an oldest-first walk that found nothing
// continues from: the last event trimmed, or the very start.
func (s *Service) feedStart(ctx context.Context, q invoicing.FeedQuery) (invoicing.FeedPosition, error) {
	cut, err := s.rdb.HGet(ctx, s.l.feedCut(q.Mode), q.CompanyID).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return invoicing.FeedPosition{}, unavailable(err)
	}
	pos, _ := parsePosition(cut)
	return pos, nil
}

func feedPos(p invoicing.FeedPosition) string {
	return strconv.FormatUint(p.Ms, 10) + "-" + strconv.FormatUint(p.Seq, 10)
}

func parsePosition(s string) (invoicing.FeedPosition, bool) {
	ms, seq, ok := strings.Cut(s, "-")
	m, err1 := strconv.ParseUint(ms, 10, 64)
	q, err2 := strconv.ParseUint(seq, 10, 64)
	if !ok || err1 != nil || err2 != nil {
		return invoicing.FeedPosition{}, false
	}
	return invoicing.FeedPosition{Ms: m, Seq: q}, true
}

// trimFeeds trims a mode's feeds that were not written lately (those that
// were are trimmed as they are), 100 companies a call.
func (b *base) trimFeeds(ctx context.Context, m invoicing.Mode) error {
	if !b.feedOn() {
		return nil
	}
	cos, err := b.rdb.SMembers(ctx, b.l.feeds(m)).Result()
	if err != nil {
		return unavailable(err)
	}
	for len(cos) > 0 {
		chunk := cos[:min(len(cos), 100)]
		cos = cos[len(chunk):]
		args := []any{b.l.p, string(m), b.feedWindow.Milliseconds()}
		for _, c := range chunk {
			args = append(args, c)
		}
		if err := feedTrimScript.Run(ctx, b.rdb, []string{b.l.feeds(m)}, args...).Err(); err != nil {
			return unavailable(err)
		}
	}
	return nil
}
