package invoicing

import (
	"encoding/json"
	"time"
)

// FeedQuery reads one page of a company's events feed in one mode: the
// events webhooks carry, in the order they were recorded.
type FeedQuery struct {
	CompanyID string // canonical
	Mode      Mode
	Types     []string // only these event types; empty: every type
	// Since and Until bound when the events were recorded: at or after
	// Since, before Until (millisecond precision); nil: unbounded.
	Since, Until *time.Time
	Newest       bool          // newest first; else oldest first
	After        *FeedPosition // continue after this position; nil: from the start
	Limit        int           // 1..100
}

// FeedPosition is a place in a feed's order: the recording of one event
// (a millisecond and a sequence within it). Positions only grow: an event
// recorded later has a greater one.
type FeedPosition struct{ Ms, Seq uint64 }

// Less reports whether p comes before q.
func (p FeedPosition) Less(q FeedPosition) bool {
	return p.Ms < q.Ms || p.Ms == q.Ms && p.Seq < q.Seq
}

// FeedPage is a page of a feed: each event as a JSON object (its id, when it
// was recorded, and the webhook body's members), where the next page starts,
// and whether the walk stopped before the end of the feed.
type FeedPage struct {
	Events []json.RawMessage
	// Next is the position after the page's last event; oldest first it is
	// never nil (a poller asks again from it), newest first it is nil once
	// the oldest event was reached.
	Next    *FeedPosition
	HasMore bool
}
