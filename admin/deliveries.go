package admin

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/invoicing-ao/gateway/events"
	"github.com/invoicing-ao/gateway/web"
)

// DeliveryLog reads an endpoint's delivery log and sends deliveries again
// (events.Service).
type DeliveryLog interface {
	Webhook(ctx context.Context, id string) (events.Webhook, error) // the endpoint's company names its audit records
	Deliveries(ctx context.Context, endpointID string, q events.DeliveryQuery) ([]events.Delivery, string, error)
	Replay(ctx context.Context, endpointID, eventID string) (events.Delivery, error)
	Recover(ctx context.Context, endpointID string, since time.Time) (events.Recovered, error)
	TestWebhook(ctx context.Context, endpointID string) (events.Event, error)
}

// Deliveries reads webhook endpoints' delivery logs (here), counts how
// they went (webhookstats.go) and sends deliveries again on request
// (webhooksend.go), for the admin API and "gateway webhooks".
type Deliveries struct {
	*base
	webhooks DeliveryLog // nil: webhooks are not configured
}

// webhooksReady refuses delivery calls when no events service is
// configured.
func (s *Deliveries) webhooksReady() error {
	if s.webhooks == nil {
		return errNoWebhooks()
	}
	return nil
}

// DeliveriesView is a page of an endpoint's delivery log, newest first.
type DeliveriesView struct {
	EndpointID string            `json:"endpointId"`
	Data       []events.Delivery `json:"data"`
	// Next is the cursor of the following page; null when this is the last.
	Next *string `json:"next"`
}

// WebhookDeliveries reads a page of an endpoint's delivery log.
func (s *Deliveries) WebhookDeliveries(ctx context.Context, id string, q events.DeliveryQuery) (DeliveriesView, error) {
	if err := s.webhooksReady(); err != nil {
		return DeliveriesView{}, err
	}
	ds, next, err := s.webhooks.Deliveries(ctx, id, q)
	if err != nil {
		return DeliveriesView{}, namedWebhook(id, err)
	}
	v := DeliveriesView{EndpointID: id, Data: ds}
	if next != "" {
		v.Next = &next
	}
	return v, nil
}

func (s *Deliveries) adminWebhookDeliveries(r *http.Request, p web.Params) (web.Answer, error) {
	q := web.ParseQuery(r.URL.RawQuery, "limit", "cursor", "state", "type")
	dq := events.DeliveryQuery{Limit: q.Int("limit", 20, 1, events.MaxDeliveriesPage)}
	dq.Cursor, _ = q.Get("cursor")
	dq.State, _ = q.Get("state")
	t, _ := q.Get("type")
	dq.Type = events.Type(t)
	if dq.Cursor != "" && !events.ValidDeliveryCursor(dq.Cursor) {
		q.Fail("cursor", "must be a page's next, as answered")
	}
	if dq.State != "" && !slices.Contains(events.DeliveryStates, dq.State) {
		q.Fail("state", "must be one of "+strings.Join(events.DeliveryStates, ", "))
	}
	if dq.Type != "" && dq.Type != events.TestType && !slices.Contains(events.Types, dq.Type) {
		q.Fail("type", "must be an event type such as invoice.paid")
	}
	if err := q.Err(); err != nil {
		return web.Answer{}, err
	}
	return result(s.WebhookDeliveries(r.Context(), p.ByName("id"), dq))
}
