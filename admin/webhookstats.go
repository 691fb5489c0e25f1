package admin

import (
	"context"
	"net/http"
	"time"

	"github.com/invoicing-ao/gateway/events"
	"github.com/invoicing-ao/gateway/web"
)

// Bounds of an endpoint's statistics.
const (
	// MaxStatsHours bounds the window of WebhookStats (the delivery log
	// keeps events for eventsRetention, a week by default).
	MaxStatsHours = 7 * 24
	// MaxStatsDeliveries bounds the deliveries read for one answer (a
	// burst of 10,000 events is counted whole, in about 100 Redis round
	// trips): the newest of a busier window are read, and the answer says so.
	MaxStatsDeliveries = 10000
)

// WebhookStatsView is how an endpoint's deliveries of the events queued in
// a window went: a success rate computed from its delivery log.
type WebhookStatsView struct {
	EndpointID string    `json:"endpointId"`
	Since      time.Time `json:"since"`
	Until      time.Time `json:"until"`
	// Deliveries are the events queued for it in the window, by state now.
	Deliveries int `json:"deliveries"`
	Delivered  int `json:"delivered"`
	Pending    int `json:"pending"`
	Failed     int `json:"failed"`
	Expired    int `json:"expired"`
	// Attempts made on them in the window, and how many of those the
	// receiver answered 2xx.
	Attempts  int `json:"attempts"`
	Succeeded int `json:"succeeded"`
	// SuccessRate is Succeeded / Attempts, 0 to 1; null without attempts.
	SuccessRate *float64 `json:"successRate"`
	// Complete is false when the window held more than MaxStatsDeliveries
	// events: the figures are then of the newest of them.
	Complete bool `json:"complete"`
}

// WebhookStats reads an endpoint's delivery log back over the last window
// and counts its deliveries and their attempts.
func (s *Deliveries) WebhookStats(ctx context.Context, id string, window time.Duration) (WebhookStatsView, error) {
	if err := s.webhooksReady(); err != nil {
		return WebhookStatsView{}, err
	}
	until := s.now().UTC()
	v := WebhookStatsView{EndpointID: id, Since: until.Add(-window), Until: until, Complete: true}
	q := events.DeliveryQuery{Limit: events.MaxDeliveriesPage}
	for {
		ds, next, err := s.webhooks.Deliveries(ctx, id, q)
		if err != nil {
			return WebhookStatsView{}, namedWebhook(id, err)
		}
		for _, d := range ds { // newest first: the window ends at the first older one
			if d.QueuedAt.Before(v.Since) {
				return v.withRate(), nil
			}
			if v.Deliveries == MaxStatsDeliveries {
				v.Complete = false
				return v.withRate(), nil
			}
			v.count(d)
		}
		if next == "" {
			return v.withRate(), nil
		}
		q.Cursor = next
	}
}

func (v *WebhookStatsView) count(d events.Delivery) {
	v.Deliveries++
	switch d.State {
	case "delivered":
		v.Delivered++
	case "pending":
		v.Pending++
	case "failed":
		v.Failed++
	case "expired":
		v.Expired++
	}
	for _, a := range d.Log {
		if a.At.Before(v.Since) {
			continue
		}
		v.Attempts++
		if a.Error == "" && a.Status >= 200 && a.Status <= 299 {
			v.Succeeded++
		}
	}
}

func (v WebhookStatsView) withRate() WebhookStatsView {
	if v.Attempts > 0 {
		r := float64(v.Succeeded) / float64(v.Attempts)
		v.SuccessRate = &r
	}
	return v
}

// adminWebhookStats: GET /admin/v1/webhooks/{id}/stats?hours=N (default 24).
func (s *Deliveries) adminWebhookStats(r *http.Request, p web.Params) (web.Answer, error) {
	q := web.ParseQuery(r.URL.RawQuery, "hours")
	hours := q.Int("hours", 24, 1, MaxStatsHours)
	if err := q.Err(); err != nil {
		return web.Answer{}, err
	}
	return result(s.WebhookStats(r.Context(), p.ByName("id"), time.Duration(hours)*time.Hour))
}
