package admin

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/invoicing-ao/gateway/audit"
	"github.com/invoicing-ao/gateway/events"
	"github.com/invoicing-ao/gateway/invoicing"
	"github.com/invoicing-ao/gateway/web"
)

// Webhooks manages companies' webhook endpoints and reads their delivery
// logs (events.Service).
type Webhooks interface {
	CreateEndpoint(ctx context.Context, ne events.NewEndpoint) (events.Endpoint, string, error)
	ListEndpoints(ctx context.Context, companyID string) ([]events.Endpoint, error)
	Endpoint(ctx context.Context, id string) (events.Endpoint, error)
	UpdateEndpoint(ctx context.Context, id string, p events.Patch) (events.Endpoint, error)
	DeleteEndpoint(ctx context.Context, id string) (e events.Endpoint, deleted bool, err error)
	RotateSecret(ctx context.Context, id string, overlap time.Duration) (events.Endpoint, string, error)
	Deliveries(ctx context.Context, endpointID string, q events.DeliveryQuery) ([]events.Delivery, string, error)
	Replay(ctx context.Context, endpointID, eventID string) (events.Delivery, error)
	Recover(ctx context.Context, endpointID string, since time.Time) (events.Recovered, error)
	SendTest(ctx context.Context, endpointID string) (events.Event, error)
}

// WebhookView is an endpoint as the admin API and the CLI show it; Secret
// is set only in the answer to a creation or a rotation, shown that once.
type WebhookView struct {
	events.Endpoint
	Secret string `json:"secret,omitempty"`
}

// webhookRecord is what the audit log keeps of an endpoint: what a person
// set, not its health (which changes by itself), never a secret.
type webhookRecord struct {
	ID                  string         `json:"id"`
	Mode                invoicing.Mode `json:"mode"`
	URL                 string         `json:"url"`
	Types               []events.Type  `json:"types"`
	Description         string         `json:"description"`
	Enabled             bool           `json:"enabled"`
	SecretRotatedAt     time.Time      `json:"secretRotatedAt"`
	PreviousSecretUntil *time.Time     `json:"previousSecretUntil"`
}

func recordOf(e events.Endpoint) webhookRecord {
	return webhookRecord{ID: e.ID, Mode: e.Mode, URL: e.URL, Types: e.Types, Description: e.Description, Enabled: e.Enabled,
		SecretRotatedAt: e.SecretRotatedAt, PreviousSecretUntil: e.PreviousSecretUntil}
}

// recordWebhook records a change of an endpoint (before nil for a creation,
// after nil for a deletion).
func (s *Service) recordWebhook(ctx context.Context, actor, action string, at time.Time, before, after *events.Endpoint) error {
	e := audit.Entry{Time: at, Actor: actor, Action: action}
	var b, a any
	if before != nil {
		e.CompanyID, e.WebhookID, b = before.CompanyID, before.ID, recordOf(*before)
	}
	if after != nil {
		e.CompanyID, e.WebhookID, a = after.CompanyID, after.ID, recordOf(*after)
	}
	return s.record(ctx, e, b, a)
}

// named makes an endpoint's "not found" say which endpoint.
func named(id string, err error) error {
	if invoicing.KindOf(err) == invoicing.NotFound {
		return &web.Error{Code: "not_found", Detail: "No webhook endpoint " + invoicing.Clip(id) + " exists.", Err: err}
	}
	return err
}

// webhooksReady refuses webhook calls when no events service is configured.
func (s *Service) webhooksReady() error {
	if s.webhooks == nil {
		return &web.Error{Code: "events_unavailable", Detail: "Webhooks are not configured on this instance."}
	}
	return nil
}

// WebhookSpec is what a new endpoint is made of.
type WebhookSpec struct {
	CompanyID   string
	Mode        invoicing.Mode
	URL         string
	Types       []string // empty: every type
	Description string
	Disabled    bool
	ExpiresAt   *time.Time // a temporary endpoint's end; nil: never
}

// CreateWebhook adds an endpoint to an existing company and records who
// did; the answer holds its signing secret, shown this once. The one path of
// the admin API and "gateway webhooks create".
func (s *Service) CreateWebhook(ctx context.Context, actor string, spec WebhookSpec) (WebhookView, error) {
	if err := s.webhooksReady(); err != nil {
		return WebhookView{}, err
	}
	if err := checkActor(actor); err != nil {
		return WebhookView{}, err
	}
	if err := refuseTexts("The webhook endpoint", textField{"url", spec.URL}, textField{"description", spec.Description}); err != nil {
		return WebhookView{}, err
	}
	company, err := s.knownCompany(ctx, spec.CompanyID)
	if err != nil {
		return WebhookView{}, err
	}
	e, secret, err := s.webhooks.CreateEndpoint(ctx, events.NewEndpoint{CompanyID: company, Mode: spec.Mode, URL: spec.URL,
		Types: spec.Types, Description: spec.Description, Disabled: spec.Disabled, ExpiresAt: spec.ExpiresAt})
	if err != nil {
		return WebhookView{}, err
	}
	if err := s.recordWebhook(ctx, actor, audit.ActionWebhookCreated, e.CreatedAt, nil, &e); err != nil {
		return WebhookView{}, err
	}
	return WebhookView{Endpoint: e, Secret: secret}, nil
}

// ListWebhooks lists a company's endpoints, LIVE then TEST, oldest first.
func (s *Service) ListWebhooks(ctx context.Context, companyID string) ([]WebhookView, error) {
	if err := s.webhooksReady(); err != nil {
		return nil, err
	}
	company, err := parseCompany(companyID)
	if err != nil {
		return nil, err
	}
	eps, err := s.webhooks.ListEndpoints(ctx, company)
	if err != nil {
		return nil, err
	}
	out := make([]WebhookView, len(eps))
	for i, e := range eps {
		out[i] = WebhookView{Endpoint: e}
	}
	return out, nil
}

// Webhook reads one endpoint.
func (s *Service) Webhook(ctx context.Context, id string) (WebhookView, error) {
	if err := s.webhooksReady(); err != nil {
		return WebhookView{}, err
	}
	e, err := s.webhooks.Endpoint(ctx, id)
	return WebhookView{Endpoint: e}, named(id, err)
}

// UpdateWebhook changes an endpoint (URL, types, description, enabled) and
// records who did.
func (s *Service) UpdateWebhook(ctx context.Context, actor, id string, p events.Patch) (WebhookView, error) {
	if err := s.webhooksReady(); err != nil {
		return WebhookView{}, err
	}
	if err := checkActor(actor); err != nil {
		return WebhookView{}, err
	}
	if err := refuseTexts("The change", patchTexts(p)...); err != nil {
		return WebhookView{}, err
	}
	before, err := s.webhooks.Endpoint(ctx, id)
	if err != nil {
		return WebhookView{}, named(id, err)
	}
	// A change in effect but not confirmed by Redis's replicas is recorded
	// (it applies now), and its error returned.
	after, err := s.webhooks.UpdateEndpoint(ctx, id, p)
	if err != nil && !(inEffect(err) && after.ID != "") {
		return WebhookView{}, named(id, err)
	}
	if rerr := s.recordWebhook(ctx, actor, audit.ActionWebhookUpdated, after.UpdatedAt, &before, &after); rerr != nil {
		return WebhookView{}, rerr
	}
	if err != nil {
		return WebhookView{}, err
	}
	return WebhookView{Endpoint: after}, nil
}

// DeleteWebhook deletes an endpoint, what waits for it and its delivery log,
// and records who did. Deleting an endpoint deleted lately answers it as it
// was and records nothing (events.Service.DeleteEndpoint).
func (s *Service) DeleteWebhook(ctx context.Context, actor, id string) (WebhookView, error) {
	if err := s.webhooksReady(); err != nil {
		return WebhookView{}, err
	}
	if err := checkActor(actor); err != nil {
		return WebhookView{}, err
	}
	e, deleted, err := s.webhooks.DeleteEndpoint(ctx, id)
	if err != nil && !(deleted && inEffect(err)) {
		return WebhookView{}, named(id, err)
	}
	// A deletion in effect but not confirmed by Redis's replicas is
	// recorded now: deleting again (what its error says to do) records
	// nothing.
	if deleted {
		if rerr := s.recordWebhook(ctx, actor, audit.ActionWebhookDeleted, s.now(), &e, nil); rerr != nil {
			return WebhookView{}, rerr
		}
	}
	if err != nil {
		return WebhookView{}, err
	}
	return WebhookView{Endpoint: e}, nil
}

// RotateWebhookSecret gives an endpoint a new signing secret (in the
// answer, shown this once); the old one signs beside it for overlap.
func (s *Service) RotateWebhookSecret(ctx context.Context, actor, id string, overlap time.Duration) (WebhookView, error) {
	if err := s.webhooksReady(); err != nil {
		return WebhookView{}, err
	}
	if err := checkActor(actor); err != nil {
		return WebhookView{}, err
	}
	before, err := s.webhooks.Endpoint(ctx, id)
	if err != nil {
		return WebhookView{}, named(id, err)
	}
	after, secret, err := s.webhooks.RotateSecret(ctx, id, overlap)
	if err != nil {
		return WebhookView{}, named(id, err)
	}
	if err := s.recordWebhook(ctx, actor, audit.ActionWebhookSecretRotated, after.SecretRotatedAt, &before, &after); err != nil {
		return WebhookView{}, err
	}
	return WebhookView{Endpoint: after, Secret: secret}, nil
}

// DeliveriesView is a page of an endpoint's delivery log, newest first.
type DeliveriesView struct {
	EndpointID string            `json:"endpointId"`
	Data       []events.Delivery `json:"data"`
	// Next is the cursor of the following page; null when this is the last.
	Next *string `json:"next"`
}

// WebhookDeliveries reads a page of an endpoint's delivery log.
func (s *Service) WebhookDeliveries(ctx context.Context, id string, q events.DeliveryQuery) (DeliveriesView, error) {
	if err := s.webhooksReady(); err != nil {
		return DeliveriesView{}, err
	}
	ds, next, err := s.webhooks.Deliveries(ctx, id, q)
	if err != nil {
		return DeliveriesView{}, named(id, err)
	}
	v := DeliveriesView{EndpointID: id, Data: ds}
	if next != "" {
		v.Next = &next
	}
	return v, nil
}

// The admin API's handlers.

func (s *Service) adminCreateWebhook(r *http.Request, p web.Params) (web.Answer, error) {
	m, fe, err := web.ReadJSONBody(r, []string{"mode", "url", "types", "description", "enabled"})
	if err != nil {
		return web.Answer{}, err
	}
	spec := WebhookSpec{CompanyID: p.ByName("id")}
	modeS, _ := web.StringMember(m, "mode", &fe)
	if spec.Mode, err = invoicing.ParseMode(modeS); err != nil {
		fe = append(fe, web.FieldError{Field: "mode", Message: "must be LIVE or TEST"})
	}
	var ok bool
	if spec.URL, ok = web.StringMember(m, "url", &fe); !ok {
		fe = append(fe, web.FieldError{Field: "url", Message: "is required"})
	}
	spec.Description, _ = web.StringMember(m, "description", &fe)
	fe = append(fe, checkTexts(textField{"url", spec.URL}, textField{"description", spec.Description})...)
	spec.Types = typesMember(m, &fe)
	if enabled, given := boolMember(m, "enabled", &fe); given {
		spec.Disabled = !enabled
	}
	if len(fe) > 0 {
		return web.Answer{}, &web.Error{Code: "invalid_body", Detail: "The webhook endpoint is invalid.", Fields: fe}
	}
	v, err := s.CreateWebhook(r.Context(), actor(r), spec)
	if err != nil {
		return web.Answer{}, err
	}
	return web.Answer{Status: http.StatusCreated, Body: v, Location: "/admin/v1/webhooks/" + v.ID}, nil
}

func (s *Service) adminListWebhooks(r *http.Request, p web.Params) (web.Answer, error) {
	eps, err := s.ListWebhooks(r.Context(), p.ByName("id"))
	if err != nil {
		return web.Answer{}, err
	}
	return web.Answer{Body: map[string]any{"data": eps}}, nil
}

func (s *Service) adminGetWebhook(r *http.Request, p web.Params) (web.Answer, error) {
	return result(s.Webhook(r.Context(), p.ByName("id")))
}

func (s *Service) adminUpdateWebhook(r *http.Request, p web.Params) (web.Answer, error) {
	m, fe, err := web.ReadJSONBody(r, []string{"url", "types", "description", "enabled"})
	if err != nil {
		return web.Answer{}, err
	}
	var patch events.Patch
	if v, ok := web.StringMember(m, "url", &fe); ok {
		patch.URL = &v
	}
	if v, ok := web.StringMember(m, "description", &fe); ok {
		patch.Description = &v
	}
	if _, ok := m["types"]; ok {
		t := typesMember(m, &fe)
		patch.Types = &t
	}
	if v, ok := boolMember(m, "enabled", &fe); ok {
		patch.Enabled = &v
	}
	fe = append(fe, checkTexts(patchTexts(patch)...)...)
	if len(fe) > 0 {
		return web.Answer{}, &web.Error{Code: "invalid_body", Detail: "The change is invalid.", Fields: fe}
	}
	return result(s.UpdateWebhook(r.Context(), actor(r), p.ByName("id"), patch))
}

func (s *Service) adminDeleteWebhook(r *http.Request, p web.Params) (web.Answer, error) {
	return result(s.DeleteWebhook(r.Context(), actor(r), p.ByName("id")))
}

// adminRotateWebhookSecret rotates the secret: {"overlapSeconds": N}, or no
// body for the default overlap (a day).
func (s *Service) adminRotateWebhookSecret(r *http.Request, p web.Params) (web.Answer, error) {
	overlap, err := readOverlap(r, events.DefaultOverlap, events.MaxOverlap)
	if err != nil {
		return web.Answer{}, err
	}
	v, err := s.RotateWebhookSecret(r.Context(), actor(r), p.ByName("id"), overlap)
	if err != nil {
		return web.Answer{}, err
	}
	return web.Answer{Status: http.StatusCreated, Body: v}, nil
}

func (s *Service) adminWebhookDeliveries(r *http.Request, p web.Params) (web.Answer, error) {
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

// patchTexts are the text fields a change of an endpoint sets.
func patchTexts(p events.Patch) []textField {
	var out []textField
	if p.URL != nil {
		out = append(out, textField{"url", *p.URL})
	}
	if p.Description != nil {
		out = append(out, textField{"description", *p.Description})
	}
	return out
}

// typesMember reads "types": an array of event type names (absent or null:
// every type).
func typesMember(m map[string]json.RawMessage, fe *[]web.FieldError) []string {
	raw, ok := m["types"]
	if !ok || string(raw) == "null" {
		return nil
	}
	var types []string
	if json.Unmarshal(raw, &types) != nil {
		*fe = append(*fe, web.FieldError{Field: "types", Message: "must be an array of event types such as [\"invoice.paid\"]"})
		return nil
	}
	if types == nil {
		types = []string{}
	}
	return types
}

// boolMember reads an optional boolean member.
func boolMember(m map[string]json.RawMessage, name string, fe *[]web.FieldError) (v, given bool) {
	raw, ok := m[name]
	if !ok || string(raw) == "null" {
		return false, false
	}
	if json.Unmarshal(raw, &v) != nil {
		*fe = append(*fe, web.FieldError{Field: name, Message: "must be true or false"})
		return false, false
	}
	return v, true
}
