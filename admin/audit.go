package admin

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/invoicing-ao/gateway/audit"
	"github.com/invoicing-ao/gateway/authz"
	"github.com/invoicing-ao/gateway/web"
)

// AuditLog records and reads who changed which key or limit (audit.Log).
type AuditLog interface {
	Record(ctx context.Context, e audit.Entry) (audit.Event, error)
	Read(ctx context.Context, companyID string, since time.Time, limit int) ([]audit.Event, time.Time, error)
	// Ready says whether the log can record now: a change is refused
	// before it is made when it cannot (its database is down or not yet
	// migrated), rather than made and left out of the log.
	Ready(ctx context.Context) error
}

// auditReady refuses a change while the audit log cannot record it
// (apply); without a log, every change goes unrecorded.
func (s *base) auditReady(ctx context.Context) error {
	if s.audit == nil {
		return nil
	}
	return s.audit.Ready(ctx)
}

// checkActor refuses an actor the audit log could not name (audit.CheckActor):
// before anything changes, since every change is recorded with its actor.
func checkActor(actor string) error {
	err := audit.CheckActor(actor)
	why := ""
	switch {
	case err == nil && holdsSecret(actor): // percent-encoded, as names are checked (text.go)
		why = audit.ActorSecretMessage
	case err == nil:
		return nil
	case strings.TrimSpace(actor) == "":
		return &web.Error{Code: "missing_actor", Detail: "Send X-Actor with the name of the person this change is made for: the audit log records it.",
			Fields: []web.FieldError{{Field: "X-Actor", Message: "is required"}}, Err: err}
	default:
		why = fieldError("X-Actor", err).Message
	}
	return &web.Error{Code: "invalid_actor", Err: err,
		Detail: "X-Actor must name the person this change is made for in 1 to " + strconv.Itoa(audit.MaxActorLen) + " bytes of visible text, never a key or a secret.",
		Fields: []web.FieldError{{Field: "X-Actor", Message: why}}}
}

// record appends e, with before and after as JSON, to the audit log, after
// the change it describes is made. Text that the log would refuse is
// refused before any change (text.go); a state recorded before that rule
// holds it no longer: it is redacted (audit.Redact), so that such a change
// is recorded all the same. A change is made only when the log is ready
// (auditReady); when the log does not take the event all the same (its
// database failed between the change and its record), the change is in
// effect but not audited: the caller answers so (notAudited), and the
// event's ids, never its text, are logged at error level.
func (s *base) record(ctx context.Context, e audit.Entry, before, after any) error {
	if before != nil {
		b, _ := json.Marshal(before) // views: strings, times, slices
		e.Before = audit.Redact(b)
	}
	a, _ := json.Marshal(after)
	e.After = audit.Redact(a)
	if s.audit == nil {
		return nil
	}
	_, err := s.audit.Record(context.WithoutCancel(ctx), e)
	if err == nil {
		return nil
	}
	s.logger.Error("audit: event not recorded", "actor", e.Actor, "company", e.CompanyID, "action", e.Action,
		"keyId", e.KeyID, "webhookId", e.WebhookID, "err", err)
	return notAudited(e, err)
}

// notAudited is the answer to a change in effect that the audit log did not
// record. Repeating the change would make it twice (or, for a revocation,
// record nothing): the answer says what to do instead. A creation's secret
// is not shown: what was created is to be revoked or deleted, and made
// again once the log works.
func notAudited(e audit.Entry, err error) error {
	const why = "(the gateway's database did not take the event)"
	d := "The change was made and is in effect, but the audit log did not record it " + why + "; " +
		"the gateway's error log has its ids (\"audit: event not recorded\"). Do not repeat it; check the gateway's database (historyDatabaseURL)."
	switch e.Action {
	case audit.ActionKeyCreated:
		d = "Key " + e.KeyID + " was created, but the audit log did not record it " + why + ", so its secret is not shown: " +
			"revoke it (gateway keys revoke " + e.KeyID + ") once the database answers, and create another."
	case audit.ActionWebhookSecretRotated:
		d = "The signing secret of webhook endpoint " + e.WebhookID + " was rotated, but the audit log did not record it " + why + ", so the new secret is not shown: " +
			"rotate it again once the database answers, and give the receiver the secret that rotation shows."
	case audit.ActionWebhookCreated:
		d = "Webhook endpoint " + e.WebhookID + " was created, but the audit log did not record it " + why + ", so its signing secret is not shown: " +
			"delete it (gateway webhooks delete " + e.WebhookID + ") once the database answers, and create another."
	}
	return &web.Error{Code: "change_not_audited", Detail: d, Err: err}
}

// Audit reads a company's audit log, for the admin API and "gateway
// audit". Each room records its own changes (base.record).
type Audit struct {
	*base
	log  AuditLog // nil: the audit log is not configured
	keys keyLister
}

// keyLister lists a company's keys (authz.Keyring), whose expiries the
// audit log shows.
type keyLister interface {
	List(ctx context.Context, companyID string) ([]authz.Key, error)
}

// AuditView is a page of a company's audit log, oldest first.
type AuditView struct {
	CompanyID string        `json:"companyId"`
	Events    []audit.Event `json:"data"` // as every admin list: data
	// Next is the since of the following page; null when this is the last.
	Next *time.Time `json:"next"`
}

// CompanyAudit reads a company's audit events from since on, oldest first:
// about limit recorded events, with the expiries that fall among them. A
// key's expiry is no one's action and nothing records it when it passes:
// it is shown from the key's record, at its time, by the system actor, so
// it appears for every expired key, used again or not. The one path of the
// admin API and "gateway audit".
func (s *Audit) CompanyAudit(ctx context.Context, companyID string, since time.Time, limit int) (AuditView, error) {
	if s.log == nil {
		return AuditView{}, &web.Error{Code: "audit_unavailable", Detail: "The audit log is not configured."}
	}
	if limit < 1 || limit > audit.MaxRead {
		return AuditView{}, &web.Error{Code: "invalid_parameter", Detail: "limit must be 1 to " + strconv.Itoa(audit.MaxRead) + ".",
			Fields: []web.FieldError{{Field: "limit", Message: "must be 1 to " + strconv.Itoa(audit.MaxRead)}}}
	}
	companyID, err := s.knownCompany(ctx, companyID)
	if err != nil {
		return AuditView{}, err
	}
	events, next, err := s.log.Read(ctx, companyID, since, limit)
	if err != nil {
		return AuditView{}, err
	}
	keys, err := s.keys.List(ctx, companyID)
	if err != nil {
		return AuditView{}, err
	}
	until := s.now() // expiries up to now, or up to where the next page starts
	if !next.IsZero() {
		until = next.Add(-time.Millisecond)
	}
	v := AuditView{CompanyID: companyID, Events: s.withExpiries(events, keys, since, until)}
	if !next.IsZero() {
		v.Next = &next
	}
	return v, nil
}

// withExpiries merges into events (in their order) the expiries of keys that
// passed from since to until (both included, within the retention), each
// before the first event recorded after it.
func (s *Audit) withExpiries(events []audit.Event, keys []authz.Key, since, until time.Time) []audit.Event {
	if oldest := s.now().Add(-audit.DefaultRetention + time.Millisecond); since.Before(oldest) {
		since = oldest
	}
	var exp []audit.Event
	for _, k := range keys {
		at := k.ExpiresAt
		if at == nil || at.Before(since) || at.After(until) || (k.RevokedAt != nil && k.RevokedAt.Before(*at)) {
			continue
		}
		before, after := s.viewKey(k), s.viewKey(k)
		before.State, after.State = authz.StateActive, authz.StateExpired
		before.RevokedAt, after.RevokedAt = nil, nil
		b, _ := json.Marshal(before)
		a, _ := json.Marshal(after)
		id := k.ID
		exp = append(exp, audit.Event{ID: "expiry:" + k.ID, Time: *at, Actor: audit.SystemActor, CompanyID: k.CompanyID,
			Action: audit.ActionKeyExpired, KeyID: &id, Before: b, After: a})
	}
	slices.SortFunc(exp, func(a, b audit.Event) int { return a.Time.Compare(b.Time) })
	out := make([]audit.Event, 0, len(events)+len(exp))
	for _, ev := range events {
		// An expiry at the time of a recorded change comes after it: a roll
		// with no overlap ends the old key as it happens.
		for len(exp) > 0 && exp[0].Time.Before(ev.Time) {
			out, exp = append(out, exp[0]), exp[1:]
		}
		out = append(out, ev)
	}
	return append(out, exp...)
}

func (s *Audit) adminAudit(r *http.Request, p web.Params) (web.Answer, error) {
	q := web.ParseQuery(r.URL.RawQuery, "since", "limit")
	limit := q.Int("limit", audit.MaxRead, 1, audit.MaxRead)
	var since time.Time
	if v, ok := q.Get("since"); ok {
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			q.Fail("since", "must be an RFC 3339 time such as 2026-03-10T12:00:00Z")
		}
		since = t
	}
	if err := q.Err(); err != nil {
		return web.Answer{}, err
	}
	return result(s.CompanyAudit(r.Context(), p.ByName("id"), since, limit))
}
