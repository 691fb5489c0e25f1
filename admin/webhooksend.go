package admin

import (
	"context"
	"net/http"
	"time"

	"github.com/invoicing-ao/gateway/audit"
	"github.com/invoicing-ao/gateway/events"
	"github.com/invoicing-ao/gateway/invoicing"
	"github.com/invoicing-ao/gateway/web"
)

// Deliveries sent again on request: one event replayed, the failed ones
// since a time recovered, a test delivery; each recorded in the audit log
// against its endpoint.

// recordSend records a delivery sent again on request (before: the
// delivery as it was, after: what was queued), against the endpoint.
func (s *Deliveries) recordSend(ctx context.Context, actor, action, id string, before, after any) error {
	e, err := s.webhooks.Webhook(ctx, id)
	if err != nil { // the endpoint's company names the log: none, no record
		ne := audit.Entry{Actor: actor, Action: action, WebhookID: id}
		s.logger.Error("audit: event not recorded", "actor", actor, "action", action, "webhookId", id, "err", err)
		return notAudited(ne, err)
	}
	return s.record(ctx, audit.Entry{Actor: actor, CompanyID: e.CompanyID, Action: action, WebhookID: id}, before, after)
}

// sendChange is a delivery sent again on request to webhook id (send, whose
// error names what it did not find), recorded with what was queued
// (recordSend).
func sendChange[A any](s *Deliveries, actor, action, id string, send func(ctx context.Context) (A, error)) change[none, A] {
	return change[none, A]{actor: actor, audited: s.auditReady, ready: s.webhooksReady,
		make: func(ctx context.Context, _ none) (A, bool, error) {
			v, err := send(ctx)
			return v, err == nil, err
		},
		record: func(ctx context.Context, _ none, v A) error { return s.recordSend(ctx, actor, action, id, nil, v) }}
}

// ReplayWebhook sends one event to an endpoint again, now, and
// records who did.
func (s *Deliveries) ReplayWebhook(ctx context.Context, actor, id, eventID string) (events.Delivery, error) {
	c := sendChange(s, actor, audit.ActionWebhookReplayed, id, func(ctx context.Context) (events.Delivery, error) {
		d, err := s.webhooks.Replay(ctx, id, eventID)
		if invoicing.KindOf(err) == invoicing.NotFound {
			if _, gerr := s.webhooks.Webhook(ctx, id); gerr == nil {
				return d, &web.Error{Code: "not_found", Err: err,
					Detail: "No event " + invoicing.Clip(eventID) + " was sent to webhook endpoint " + id + " (or it is older than the retention)."}
			}
		}
		return d, namedWebhook(id, err)
	})
	// The log keeps which event was sent again, not the delivery.
	c.record = func(ctx context.Context, _ none, d events.Delivery) error {
		return s.recordSend(ctx, actor, audit.ActionWebhookReplayed, id, nil, map[string]any{"eventId": eventID, "type": d.Type})
	}
	return apply(ctx, c)
}

// RecoveredView is how many deliveries a recovery queued again: Queued in
// all, of which Failed (given up) and Waiting (for a retry).
type RecoveredView struct {
	EndpointID string    `json:"endpointId"`
	Since      time.Time `json:"since"`
	Queued     int       `json:"queued"`
	events.Recovered
}

// RecoverWebhook sends again, now, every delivery of an endpoint queued
// since a time that failed or waits for a retry, and records who did.
func (s *Deliveries) RecoverWebhook(ctx context.Context, actor, id string, since time.Time) (RecoveredView, error) {
	return apply(ctx, sendChange(s, actor, audit.ActionWebhookRecovered, id, func(ctx context.Context) (RecoveredView, error) {
		r, err := s.webhooks.Recover(ctx, id, since)
		return RecoveredView{EndpointID: id, Since: since.UTC(), Queued: r.Failed + r.Waiting, Recovered: r}, namedWebhook(id, err)
	}))
}

// TestSentView is a test delivery queued.
type TestSentView struct {
	EndpointID string      `json:"endpointId"`
	EventID    string      `json:"eventId"`
	Type       events.Type `json:"type"`
}

// TestWebhook queues a test delivery to an endpoint, and records who did.
func (s *Deliveries) TestWebhook(ctx context.Context, actor, id string) (TestSentView, error) {
	return apply(ctx, sendChange(s, actor, audit.ActionWebhookTested, id, func(ctx context.Context) (TestSentView, error) {
		ev, err := s.webhooks.TestWebhook(ctx, id)
		return TestSentView{EndpointID: id, EventID: ev.ID, Type: ev.Type}, namedWebhook(id, err)
	}))
}

func (s *Deliveries) adminReplayWebhook(r *http.Request, p web.Params) (web.Answer, error) {
	return result(s.ReplayWebhook(r.Context(), actor(r), p.ByName("id"), p.ByName("event")))
}

// adminRecoverWebhook: {"since": RFC 3339}.
func (s *Deliveries) adminRecoverWebhook(r *http.Request, p web.Params) (web.Answer, error) {
	m, fe, err := web.ReadJSONBody(r, []string{"since"})
	if err != nil {
		return web.Answer{}, err
	}
	var sinceErr []web.FieldError
	v, ok := web.StringMember(m, "since", &sinceErr)
	since, perr := time.Parse(time.RFC3339Nano, v)
	if len(sinceErr) > 0 || !ok || perr != nil {
		fe = append(fe, web.FieldError{Field: "since", Message: "must be an RFC 3339 time such as 2026-03-10T00:00:00Z"})
	}
	if len(fe) > 0 {
		return web.Answer{}, &web.Error{Code: "invalid_body", Detail: "The recovery is invalid.", Fields: fe}
	}
	return result(s.RecoverWebhook(r.Context(), actor(r), p.ByName("id"), since))
}

func (s *Deliveries) adminTestWebhook(r *http.Request, p web.Params) (web.Answer, error) {
	v, err := s.TestWebhook(r.Context(), actor(r), p.ByName("id"))
	if err != nil {
		return web.Answer{}, err
	}
	return web.Answer{Status: http.StatusAccepted, Body: v}, nil
}
