package main

import (
	"context"

	"github.com/invoicing-ao/gateway/events"
	"github.com/invoicing-ao/gateway/invoicing"
)

// eventsFeed serves the gateway's GET /events from the events service,
// which connectWith makes after the gateway: it is read when a request
// comes, by then made.
type eventsFeed struct{ d *deps }

func (f eventsFeed) EventTypes() []string {
	out := make([]string, len(events.Types))
	for i, t := range events.Types {
		out[i] = string(t)
	}
	return out
}

func (f eventsFeed) ReadFeed(ctx context.Context, q invoicing.FeedQuery) (invoicing.FeedPage, error) {
	return f.d.events.ReadFeed(ctx, q)
}
