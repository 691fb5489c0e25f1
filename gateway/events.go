package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/invoicing-ao/gateway/invoicing"
	"github.com/invoicing-ao/gateway/web"
)

// Feed is the events feed (events.Service): the events webhooks carry, for
// every company, read by cursor.
type Feed interface {
	// EventTypes names the event types the type filter takes.
	EventTypes() []string
	ReadFeed(ctx context.Context, q invoicing.FeedQuery) (invoicing.FeedPage, error)
}

// maxFeedTypes bounds the type filter's list: there are fewer types.
const maxFeedTypes = 20

// listEvents answers GET /events: a page of the key's company's feed in
// the key's mode. It reads Redis only, so the database's in-flight cap does
// not apply.
func (s *Server) listEvents(r *http.Request, c apiCall, _ web.Params) (web.Answer, error) {
	if s.feed == nil {
		return web.Answer{}, &web.Error{Code: "route_not_found", Detail: "The events feed is not served by this gateway."}
	}
	sc := cursorScope{company: c.company, mode: c.mode, list: c.st.Route()}
	kr, err := s.cursorKeys(r.Context())
	if err != nil {
		return web.Answer{}, err
	}
	q, err := s.feedQuery(r.URL.RawQuery, kr, &sc)
	if err != nil {
		return web.Answer{}, err
	}
	q.CompanyID, q.Mode = c.company, c.mode
	p, err := s.feed.ReadFeed(r.Context(), q)
	if err != nil {
		return web.Answer{}, err
	}
	body := &eventsPage{Events: p.Events, PageSize: q.Limit, HasMore: p.HasMore, NextCursor: kr.encodeFeedCursor(p.Next, sc)}
	// A poller that sends the ETag it has is answered 304 while nothing new
	// was recorded after its cursor.
	return web.Answer{Body: body, Conditional: true, ETag: feedETag(q, body)}, nil
}

// feedETag is an oldest-first page's tag: where it ends (its nextCursor,
// bound to the walk) and whether more follows, not its body. The page a
// poller read and the empty page read from its nextCursor then have one
// tag, so that the poll the docs describe (the last ETag sent with the
// last nextCursor) is answered 304 from its first idle poll on, rather
// than with an empty 200 first. A newest-first page, whose end does not
// move as events come, is tagged by its body ("").
func feedETag(q invoicing.FeedQuery, body *eventsPage) string {
	if q.Newest || body.NextCursor == nil {
		return ""
	}
	more := "0"
	if body.HasMore {
		more = "1"
	}
	sum := sha256.Sum256([]byte("feed\x00" + *body.NextCursor + "\x00" + more))
	return `"` + hex.EncodeToString(sum[:16]) + `"`
}

// feedQuery reads the query of GET /events. The order and the filters,
// in their canonical form, are what the cursor is bound to (sc.filter).
func (s *Server) feedQuery(raw string, kr cursorKeyring, sc *cursorScope) (invoicing.FeedQuery, error) {
	qs := web.ParseQuery(raw, "pageSize", "cursor", "order", "type", "since", "until")
	var q invoicing.FeedQuery
	q.Limit = qs.Int("pageSize", defaultPageSize, 1, maxPageSize)
	q.Newest = enumParam(qs, "order", "oldest", "newest") == "newest"
	if v, ok := qs.Get("type"); ok {
		q.Types = s.feedTypes(qs, v)
	}
	q.Since, q.Until = instantParam(qs, "since"), instantParam(qs, "until")
	if q.Since != nil && q.Until != nil && !q.Since.Before(*q.Until) {
		qs.Fail("until", "must be after since")
	}
	sc.filter = feedFilterKey(q)
	if c, ok := qs.Get("cursor"); ok {
		if q.After, ok = kr.decodeFeedCursor(c, *sc); !ok {
			qs.Fail("cursor", "is not a cursor of this feed: use nextCursor as returned, with the same order, filters, company and key mode")
		}
	}
	return q, qs.Err()
}

// feedTypes reads the type filter: event types, comma-separated (a type
// named twice counts once).
func (s *Server) feedTypes(qs *web.Query, v string) []string {
	known := s.feed.EventTypes()
	names := strings.Split(v, ",")
	if len(names) > maxFeedTypes {
		qs.Fail("type", "must name at most "+strconv.Itoa(maxFeedTypes)+" event types")
		return nil
	}
	out := make([]string, 0, len(names))
	for _, n := range names {
		n = strings.TrimSpace(n)
		if !slices.Contains(known, n) {
			qs.Fail("type", "must be event types, comma-separated, among "+strings.Join(known, ", "))
			return nil
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// instantParam parses an optional RFC 3339 instant.
func instantParam(q *web.Query, name string) *time.Time {
	v, ok := q.Get(name)
	if !ok {
		return nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		q.Fail(name, "must be an RFC 3339 date and time, e.g. 2026-03-01T09:00:00Z")
		return nil
	}
	return &t
}

// feedFilterKey is a feed walk's canonical form: its order and filters
// (the types in their canonical order, the range to the millisecond, as
// the feed reads it).
func feedFilterKey(q invoicing.FeedQuery) string {
	types := slices.Clone(q.Types)
	slices.Sort(types)
	k := "order=oldest"
	if q.Newest {
		k = "order=newest"
	}
	k += "&type=" + strings.Join(types, ",")
	for _, b := range []struct {
		name string
		t    *time.Time
	}{{"since", q.Since}, {"until", q.Until}} {
		if b.t != nil {
			k += "&" + b.name + "=" + strconv.FormatInt(b.t.UnixMilli(), 10)
		}
	}
	return k
}

// eventsPage is GET /events's answer. Each event is written as the feed
// made it (the webhook body's members, with its id and recording time).
type eventsPage struct {
	Events     []json.RawMessage `json:"data"`
	PageSize   int               `json:"pageSize"`
	HasMore    bool              `json:"hasMore"`
	NextCursor *string           `json:"nextCursor"`
}
