package admin

import (
	"context"
	"time"

	"github.com/invoicing-ao/gateway/audit"
	"github.com/invoicing-ao/gateway/events"
	"github.com/invoicing-ao/gateway/invoicing"
	"github.com/invoicing-ao/gateway/web"
)

// Events manages companies' webhook endpoints and reads their delivery
// logs (events.Service).
type Events interface {
	Endpoints
	DeliveryLog
}

// Endpoints manages companies' webhook endpoints (events.Service).
type Endpoints interface {
	CreateWebhook(ctx context.Context, ne events.NewWebhook) (events.Webhook, string, error)
	ListWebhooks(ctx context.Context, companyID string) ([]events.Webhook, error)
	Webhook(ctx context.Context, id string) (events.Webhook, error)
	UpdateWebhook(ctx context.Context, id string, p events.Patch) (events.Webhook, error)
	DeleteWebhook(ctx context.Context, id string) (e events.Webhook, deleted bool, err error)
	RotateSecret(ctx context.Context, id string, overlap time.Duration) (events.Webhook, string, error)
}

// Webhooks administers companies' webhook endpoints: creates, reads,
// changes and deletes them, and rotates their signing secrets, for the
// admin API (webhookshttp.go) and "gateway webhooks". Their deliveries
// are Deliveries'.
type Webhooks struct {
	*base
	webhooks Endpoints // nil: webhooks are not configured
}

// WebhookView is an endpoint as the admin API and the CLI show it; Secret
// is set only in the answer to a creation or a rotation, shown that once.
type WebhookView struct {
	events.Webhook
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

func webhookRecordOf(e events.Webhook) webhookRecord {
	return webhookRecord{ID: e.ID, Mode: e.Mode, URL: e.URL, Types: e.Types, Description: e.Description, Enabled: e.Enabled,
		SecretRotatedAt: e.SecretRotatedAt, PreviousSecretUntil: e.PreviousSecretUntil}
}

// recordWebhook records a change of an endpoint (before nil for a creation,
// after nil for a deletion).
func (s *Webhooks) recordWebhook(ctx context.Context, actor, action string, at time.Time, before, after *events.Webhook) error {
	e := audit.Entry{Time: at, Actor: actor, Action: action}
	var b, a any
	if before != nil {
		e.CompanyID, e.WebhookID, b = before.CompanyID, before.ID, webhookRecordOf(*before)
	}
	if after != nil {
		e.CompanyID, e.WebhookID, a = after.CompanyID, after.ID, webhookRecordOf(*after)
	}
	return s.record(ctx, e, b, a)
}

// namedWebhook makes a webhook endpoint's "not found" say which endpoint.
func namedWebhook(id string, err error) error {
	if invoicing.KindOf(err) == invoicing.NotFound {
		return &web.Error{Code: "not_found", Detail: "No webhook endpoint " + invoicing.Clip(id) + " exists.", Err: err}
	}
	return err
}

// webhooksReady refuses webhook calls when no events service is configured.
func (s *Webhooks) webhooksReady() error {
	if s.webhooks == nil {
		return errNoWebhooks()
	}
	return nil
}

// errNoWebhooks answers a webhook call on an instance without events.
func errNoWebhooks() error {
	return &web.Error{Code: "events_unavailable", Detail: "Webhooks are not configured on this instance."}
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
func (s *Webhooks) CreateWebhook(ctx context.Context, actor string, spec WebhookSpec) (WebhookView, error) {
	return apply(ctx, change[none, WebhookView]{actor: actor, audited: s.auditReady, ready: s.webhooksReady,
		what: "The webhook endpoint", texts: []textField{{"url", spec.URL}, {"description", spec.Description}},
		make: func(ctx context.Context, _ none) (WebhookView, bool, error) {
			company, err := s.knownCompany(ctx, spec.CompanyID)
			if err != nil {
				return WebhookView{}, false, err
			}
			e, secret, err := s.webhooks.CreateWebhook(ctx, events.NewWebhook{CompanyID: company, Mode: spec.Mode, URL: spec.URL,
				Types: spec.Types, Description: spec.Description, Disabled: spec.Disabled, ExpiresAt: spec.ExpiresAt})
			return WebhookView{Webhook: e, Secret: secret}, err == nil, err
		},
		record: func(ctx context.Context, _ none, v WebhookView) error {
			return s.recordWebhook(ctx, actor, audit.ActionWebhookCreated, v.CreatedAt, nil, &v.Webhook)
		}})
}

// ListWebhooks lists a company's endpoints, LIVE then TEST, oldest first.
func (s *Webhooks) ListWebhooks(ctx context.Context, companyID string) ([]WebhookView, error) {
	if err := s.webhooksReady(); err != nil {
		return nil, err
	}
	company, err := parseCompany(companyID)
	if err != nil {
		return nil, err
	}
	eps, err := s.webhooks.ListWebhooks(ctx, company)
	if err != nil {
		return nil, err
	}
	out := make([]WebhookView, len(eps))
	for i, e := range eps {
		out[i] = WebhookView{Webhook: e}
	}
	return out, nil
}

// Webhook reads one endpoint.
func (s *Webhooks) Webhook(ctx context.Context, id string) (WebhookView, error) {
	if err := s.webhooksReady(); err != nil {
		return WebhookView{}, err
	}
	e, err := s.webhooks.Webhook(ctx, id)
	return WebhookView{Webhook: e}, namedWebhook(id, err)
}

// readWebhook reads webhook id before a change of it, for the audit log.
func (s *Webhooks) readWebhook(id string) func(context.Context) (events.Webhook, error) {
	return func(ctx context.Context) (events.Webhook, error) {
		e, err := s.webhooks.Webhook(ctx, id)
		return e, namedWebhook(id, err)
	}
}

// UpdateWebhook changes an endpoint (URL, types, description, enabled) and
// records who did.
func (s *Webhooks) UpdateWebhook(ctx context.Context, actor, id string, p events.Patch) (WebhookView, error) {
	return apply(ctx, change[events.Webhook, WebhookView]{actor: actor, audited: s.auditReady, ready: s.webhooksReady,
		what: "The change", texts: patchTexts(p), read: s.readWebhook(id),
		make: func(ctx context.Context, _ events.Webhook) (WebhookView, bool, error) {
			e, err := s.webhooks.UpdateWebhook(ctx, id, p)
			return WebhookView{Webhook: e}, err == nil || e.ID != "", namedWebhook(id, err)
		},
		record: func(ctx context.Context, before events.Webhook, after WebhookView) error {
			return s.recordWebhook(ctx, actor, audit.ActionWebhookUpdated, after.UpdatedAt, &before, &after.Webhook)
		}})
}

// DeleteWebhook deletes an endpoint, what waits for it and its delivery log,
// and records who did. Deleting an endpoint deleted lately answers it as it
// was and records nothing (events.Service.DeleteWebhook): so a deletion in
// effect but not confirmed by Redis's replicas, recorded at once, is
// recorded once when its error says to delete it again.
func (s *Webhooks) DeleteWebhook(ctx context.Context, actor, id string) (WebhookView, error) {
	return apply(ctx, change[none, WebhookView]{actor: actor, audited: s.auditReady, ready: s.webhooksReady,
		make: func(ctx context.Context, _ none) (WebhookView, bool, error) {
			e, deleted, err := s.webhooks.DeleteWebhook(ctx, id)
			return WebhookView{Webhook: e}, deleted, namedWebhook(id, err)
		},
		record: func(ctx context.Context, _ none, v WebhookView) error {
			return s.recordWebhook(ctx, actor, audit.ActionWebhookDeleted, s.now(), &v.Webhook, nil)
		}})
}

// RotateWebhookSecret gives an endpoint a new signing secret (in the
// answer, shown this once); the old one signs beside it for overlap.
func (s *Webhooks) RotateWebhookSecret(ctx context.Context, actor, id string, overlap time.Duration) (WebhookView, error) {
	return apply(ctx, change[events.Webhook, WebhookView]{actor: actor, audited: s.auditReady, ready: s.webhooksReady, read: s.readWebhook(id),
		make: func(ctx context.Context, _ events.Webhook) (WebhookView, bool, error) {
			e, secret, err := s.webhooks.RotateSecret(ctx, id, overlap)
			return WebhookView{Webhook: e, Secret: secret}, err == nil, namedWebhook(id, err)
		},
		record: func(ctx context.Context, before events.Webhook, after WebhookView) error {
			return s.recordWebhook(ctx, actor, audit.ActionWebhookSecretRotated, after.SecretRotatedAt, &before, &after.Webhook)
		}})
}
