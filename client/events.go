package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"time"
)

// Event is an event of the events feed: the WebhookEvent its webhook
// deliveries carry (the same ID, type, timestamp, company, mode and data:
// one handler for both), and when it was recorded in the feed.
type Event struct {
	WebhookEvent
	RecordedAt time.Time
}

// EventPage is a page of the events feed, its events' data kept exact (the
// generated EventsPage decodes data into maps of float64; FeedEvent is its item).
type EventPage struct {
	Events []Event
	// HasMore: the read stopped before the feed's end; ask again at once.
	HasMore bool
	// NextCursor is where the next page starts; oldest first, never nil.
	NextCursor *string
}

// ListEvents returns one page of the events feed (GET /events).
func (a *API) ListEvents(ctx context.Context, params ListEventsParams) (*EventPage, error) {
	res, err := a.gen.ListEventsWithResponse(ctx, &params)
	if err != nil {
		return nil, err
	}
	if res.JSON200 == nil {
		return nil, problemFrom(res.HTTPResponse, res.Body)
	}
	var raw struct {
		Data []struct {
			ID         string          `json:"id"`
			RecordedAt time.Time       `json:"recordedAt"`
			Type       string          `json:"type"`
			Timestamp  time.Time       `json:"timestamp"`
			CompanyID  string          `json:"companyId"`
			Mode       string          `json:"mode"`
			Data       json.RawMessage `json:"data"`
		} `json:"data"`
		HasMore    bool    `json:"hasMore"`
		NextCursor *string `json:"nextCursor"`
	}
	d := json.NewDecoder(bytes.NewReader(res.Body))
	d.UseNumber()
	if err := d.Decode(&raw); err != nil {
		return nil, fmt.Errorf("client: the events page: %w", err)
	}
	p := &EventPage{Events: make([]Event, len(raw.Data)), HasMore: raw.HasMore, NextCursor: raw.NextCursor}
	for i, e := range raw.Data {
		p.Events[i] = Event{WebhookEvent: WebhookEvent{ID: e.ID, Type: e.Type, Timestamp: e.Timestamp, CompanyID: e.CompanyID, Mode: e.Mode, Data: e.Data},
			RecordedAt: e.RecordedAt}
	}
	return p, nil
}

// Events yields the events of the feed matching params from params.Cursor
// (nil: the oldest kept, or the newest with Order newest), page after page,
// until the walk has caught up (HasMore false). An error ends the walk,
// yielded once with a zero Event.
func (a *API) Events(ctx context.Context, params ListEventsParams) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		q := params // a copy: the sequence may be ranged over more than once
		if q.PageSize == nil {
			size := PageSize(iteratePageSize)
			q.PageSize = &size
		}
		for {
			p, err := a.ListEvents(ctx, q)
			if err != nil {
				yield(Event{}, err)
				return
			}
			for _, e := range p.Events {
				if !yield(e, nil) {
					return
				}
			}
			if !p.HasMore || p.NextCursor == nil {
				return
			}
			q.Cursor = p.NextCursor
		}
	}
}

// PollEvents walks the feed oldest first from cursor ("" for the oldest
// event kept), calling handle for each event in the order recorded, until
// it has caught up, and returns the cursor to call it with next time (after
// a pause of a few seconds): a poller that stores that cursor with the
// effects of its events, and calls again from it, sees every event once.
// When handle fails, PollEvents returns its error and the cursor of the
// pages handled whole: the failed page's events come again (drop ids you
// processed).
func (a *API) PollEvents(ctx context.Context, params ListEventsParams, cursor string, handle func(Event) error) (string, error) {
	q := params
	q.Order = nil
	if q.PageSize == nil {
		size := PageSize(iteratePageSize)
		q.PageSize = &size
	}
	for {
		q.Cursor = nil
		if cursor != "" {
			q.Cursor = &cursor
		}
		p, err := a.ListEvents(ctx, q)
		if err != nil {
			return cursor, err
		}
		for _, e := range p.Events {
			if err := handle(e); err != nil {
				return cursor, err
			}
		}
		if p.NextCursor != nil {
			cursor = *p.NextCursor
		}
		if !p.HasMore {
			return cursor, nil
		}
	}
}
