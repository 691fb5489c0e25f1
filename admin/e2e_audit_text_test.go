package admin_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/admin"
	"github.com/invoicing-ao/gateway/audit"
	"github.com/invoicing-ao/gateway/authz"
	"github.com/invoicing-ao/gateway/events"
	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
	"github.com/invoicing-ao/gateway/tenants"
	"github.com/invoicing-ao/gateway/web"
)

// Secret-shaped strings, as the attack used them: a LIVE key's form (49
// base62 characters after its prefix) and a webhook signing secret.
var (
	keyShaped   = "igw_live_" + strings.Repeat("Ab3dE5gH7j", 4) + "K9mN0pQrS"
	whsecShaped = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
)

// A change whose text holds a secret or hides text is refused at the edge
// with 400 naming the field, before anything changes: no key, no endpoint,
// no audit event, and nothing of the string in any log. (Accepted, such a
// change was made while the audit log refused its event, and the whole
// event, secret included, went to the error log.)
func TestSecretShapedTextRefused(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	in := w.start()
	recv := newReceiver(t)
	call := func(method, path, body string) resp {
		return do(t, in.admin.URL, req{Method: method, Path: path, Body: body,
			Header: map[string]string{"Authorization": "Bearer " + in.adminToken, "X-Actor": testActor}})
	}
	r := call("POST", "/admin/v1/companies/"+coA+"/webhooks", `{"mode":"TEST","url":"`+recv.srv.URL+`/h","description":"ERP"}`)
	if r.Status != 201 {
		t.Fatalf("a plain endpoint: %d %s", r.Status, r.Body)
	}
	ep := r.json(t)["id"].(string)
	keysBefore, auditBefore := countKeys(t, call), countAudit(t, call)
	enc := url.QueryEscape(strings.Replace(keyShaped, "_", "%5F", 1)) // the key, percent-encoded twice
	for _, c := range []struct{ name, method, path, body, field string }{
		{"key name", "POST", "/admin/v1/keys", `{"companyId":"` + coA + `","mode":"LIVE","scopes":["clients:read"],"name":"backup ` + keyShaped + `"}`, "name"},
		{"key name, upper case", "POST", "/admin/v1/keys", `{"companyId":"` + coA + `","mode":"LIVE","scopes":["clients:read"],"name":"` + strings.ToUpper(keyShaped) + `"}`, "name"},
		{"key name, reversed", "POST", "/admin/v1/keys", `{"companyId":"` + coA + `","mode":"LIVE","scopes":["clients:read"],"name":"backup \u202Eyek"}`, "name"},
		{"url query", "POST", "/admin/v1/companies/" + coA + "/webhooks", `{"mode":"TEST","url":"https://hooks.example.com/w?s=` + whsecShaped + `"}`, "url"},
		{"url query, encoded", "POST", "/admin/v1/companies/" + coA + "/webhooks", `{"mode":"TEST","url":"https://hooks.example.com/w?k=` + enc + `"}`, "url"},
		{"description", "POST", "/admin/v1/companies/" + coA + "/webhooks", `{"mode":"TEST","url":"` + recv.srv.URL + `/h","description":"key ` + keyShaped + `"}`, "description"},
		{"description, changed", "PATCH", "/admin/v1/webhooks/" + ep, `{"description":"` + whsecShaped + `"}`, "description"},
		{"url, changed", "PATCH", "/admin/v1/webhooks/" + ep, `{"url":"` + recv.srv.URL + `/h?t=` + keyShaped + `"}`, "url"},
		{"description with a zero-width joiner", "PATCH", "/admin/v1/webhooks/" + ep, `{"description":"E\u200DRP"}`, "description"},
	} {
		r := call(c.method, c.path, c.body)
		p := expectProblem(t, r, 400, "invalid_body")
		if errs, _ := p["errors"].([]any); len(errs) != 1 || errs[0].(map[string]any)["field"] != c.field {
			t.Errorf("%s: errors %v, want one naming %s", c.name, p["errors"], c.field)
		}
	}
	if n := countKeys(t, call); n != keysBefore {
		t.Errorf("%d keys, %d before: a refused key was made", n, keysBefore)
	}
	if n := countAudit(t, call); n != auditBefore {
		t.Errorf("%d audit events, %d before", n, auditBefore)
	}
	if got := call("GET", "/admin/v1/webhooks/"+ep, "").json(t); got["description"] != "ERP" || got["url"] != recv.srv.URL+"/h" {
		t.Errorf("the endpoint changed: %v", got)
	}
	logs := in.logs.String()
	for _, s := range []string{keyShaped[:29], strings.ToUpper(keyShaped[:29]), whsecShaped[:26], "yek", "audit: event"} {
		if strings.Contains(logs, s) {
			t.Errorf("the logs hold %q", s)
		}
	}
}

// An endpoint whose description was stored with a secret in it (before
// such text was refused) can still be changed and deleted, and each change
// is recorded, with the secret redacted from its states.
func TestStoredSecretRedactedFromAudit(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	in := w.start()
	recv := newReceiver(t)
	e, _, err := in.events.CreateWebhook(context.Background(), events.NewWebhook{CompanyID: coA, Mode: invoicing.Test,
		URL: recv.srv.URL + "/h", Description: "old " + keyShaped})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := in.adm.Webhooks.UpdateWebhook(context.Background(), testActor, e.ID, events.Patch{Enabled: new(false)}); err != nil {
		t.Fatalf("disabling: %v", err)
	}
	if _, err := in.adm.Webhooks.DeleteWebhook(context.Background(), testActor, e.ID); err != nil {
		t.Fatalf("deleting: %v", err)
	}
	v, err := in.adm.Audit.CompanyAudit(context.Background(), coA, time.Time{}, audit.MaxRead)
	if err != nil {
		t.Fatal(err)
	}
	var actions []string
	for _, ev := range v.Events {
		actions = append(actions, ev.Action)
		if b := string(ev.Before) + string(ev.After); strings.Contains(b, "igw_live_") || !strings.Contains(b, `old `+audit.Redacted) {
			t.Errorf("%s: before %s, after %s", ev.Action, ev.Before, ev.After)
		}
	}
	if strings.Join(actions, ",") != audit.ActionWebhookUpdated+","+audit.ActionWebhookDeleted {
		t.Errorf("recorded %v", actions)
	}
}

// failingLog is an audit log whose database fails after the change is
// made: ready before it, refusing the record.
type failingLog struct{ admin.AuditLog }

func (failingLog) Record(context.Context, audit.Entry) (audit.Event, error) {
	return audit.Event{}, fmt.Errorf("%w: connection reset", audit.ErrUnavailable)
}

func (failingLog) Ready(context.Context) error { return nil }

// downLog is an audit log whose database does not answer.
type downLog struct{ admin.AuditLog }

func (downLog) Ready(context.Context) error {
	return fmt.Errorf("%w: connection refused", audit.ErrUnavailable)
}

// A change is refused, before anything is changed, while the audit log
// cannot record it: 503 audit_unavailable, and nothing to undo.
func TestChangeRefusedWhileTheAuditLogIsDown(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	keys := authz.New(authz.Config{Redis: w.rdb, Prefix: w.prefix + "authz:"})
	t.Cleanup(func() { _ = keys.Close() })
	limiter := tenants.New(tenants.Config{Redis: w.rdb, Prefix: w.prefix + "tenants:", LiveDefault: tenants.Limit{Rate: 10, Burst: 10},
		TestDefault: tenants.Limit{Rate: 10, Burst: 10}})
	s := admin.New(admin.Config{Keys: keys, Limiter: limiter, Audit: downLog{}})
	ctx := context.Background()
	scopes, _ := authz.ParseScopes("clients:read")
	_, err := s.Keys.CreateKey(ctx, testActor, admin.KeySpec{CompanyID: coA, Mode: invoicing.Live, Scopes: scopes, Name: "ERP nightly"})
	if p := web.Problem(err); p.Code != "audit_unavailable" || p.Status() != 503 {
		t.Errorf("a creation while the audit log is down: %d %s %q", p.Status(), p.Code, p.Detail)
	}
	if list, _ := s.Keys.ListKeys(ctx, coA); len(list) != 0 {
		t.Errorf("%d keys: the creation was made", len(list))
	}
	_, err = s.Limits.SetCompanyLimit(ctx, testActor, coA, "LIVE", 5, 5)
	if p := web.Problem(err); p.Code != "audit_unavailable" {
		t.Errorf("a limit while the audit log is down: %v", err)
	}
	if l, _ := limiter.Limits(ctx, coA); l.LiveCustom {
		t.Errorf("the limit was set: %+v", l)
	}
}

// A change the audit log does not take is in effect but answered
// 503 change_not_audited, saying so and what to do; the error log names
// the event by its ids, without its text. A creation's secret is not shown.
func TestChangeNotAudited(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	logs := &testenv.SyncBuffer{}
	logger := slog.New(slog.NewJSONHandler(logs, nil))
	keys := authz.New(authz.Config{Redis: w.rdb, Prefix: w.prefix + "authz:", Logger: logger})
	t.Cleanup(func() { _ = keys.Close() })
	limiter := tenants.New(tenants.Config{Redis: w.rdb, Prefix: w.prefix + "tenants:", LiveDefault: tenants.Limit{Rate: 10, Burst: 10},
		TestDefault: tenants.Limit{Rate: 10, Burst: 10}, Logger: logger})
	s := admin.New(admin.Config{Keys: keys, Limiter: limiter, Audit: failingLog{}, Logger: logger})
	ctx := context.Background()
	scopes, _ := authz.ParseScopes("clients:read")
	_, err := s.Keys.CreateKey(ctx, testActor, admin.KeySpec{CompanyID: coA, Mode: invoicing.Live, Scopes: scopes, Name: "ERP nightly"})
	p := web.Problem(err)
	list, _ := s.Keys.ListKeys(ctx, coA)
	if len(list) != 1 {
		t.Fatalf("%d keys: the creation was not made", len(list))
	}
	id := list[0].ID
	if p.Code != "change_not_audited" || p.Status() != 503 || !strings.Contains(p.Detail, id) || !strings.Contains(p.Detail, "gateway keys revoke "+id) ||
		strings.Contains(p.Detail, "igw_") {
		t.Errorf("creation: %d %s %q", p.Status(), p.Code, p.Detail)
	}
	_, err = s.Keys.RevokeKey(ctx, testActor, id, false)
	if p := web.Problem(err); p.Code != "change_not_audited" || !strings.Contains(p.Detail, "in effect") {
		t.Errorf("revocation: %s %q", p.Code, p.Detail)
	}
	if k, _ := keys.Get(ctx, id); k.State != authz.StateRevoked {
		t.Errorf("the revocation was not made: %+v", k)
	}
	_, err = s.Limits.SetCompanyLimit(ctx, testActor, coA, "LIVE", 5, 5)
	if p := web.Problem(err); p.Code != "change_not_audited" {
		t.Errorf("limit: %v", err)
	}
	var lines int
	for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) != nil || m["msg"] != "audit: event not recorded" {
			continue
		}
		lines++
		if m["company"] != coA || m["action"] == nil || strings.Contains(l, "ERP nightly") || strings.Contains(l, "before") || strings.Contains(l, "after") {
			t.Errorf("log line %s", l)
		}
	}
	if lines != 3 {
		t.Errorf("%d lines of events not recorded, want 3:\n%s", lines, logs)
	}
	if !errors.Is(err, audit.ErrUnavailable) {
		t.Errorf("the cause is lost: %v", err)
	}
}

func countKeys(t *testing.T, call func(method, path, body string) resp) int {
	t.Helper()
	var page struct{ Data []any }
	if err := json.Unmarshal(call("GET", "/admin/v1/keys?companyId="+coA, "").Body, &page); err != nil {
		t.Fatal(err)
	}
	return len(page.Data)
}

func countAudit(t *testing.T, call func(method, path, body string) resp) int {
	t.Helper()
	var page struct{ Data []any }
	if err := json.Unmarshal(call("GET", "/admin/v1/companies/"+coA+"/audit", "").Body, &page); err != nil {
		t.Fatal(err)
	}
	return len(page.Data)
}
