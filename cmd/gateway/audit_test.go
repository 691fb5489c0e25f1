package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	auditlog "github.com/invoicing-ao/gateway/audit"
)

// The audit's lines name the webhook endpoint concerned and say what each
// webhook action did, from the views the admin API records; the cases
// TestWebhooksCommands does not make (a change of URL and description, a
// creation disabled, a rotation without overlap, one delivery recovered)
// are here. Keys and limits keep their lines.
func TestAuditLinesOfWebhooks(t *testing.T) {
	t.Parallel()
	const ep = "ep_aaaaaaaaaaaaaaaaaaaaaaaaaa"
	at := time.Date(2026, 3, 2, 9, 30, 0, 0, time.UTC)
	endpoint := func(url, desc string, enabled bool, types ...string) string {
		b, err := json.Marshal(map[string]any{"id": ep, "mode": "LIVE", "url": url, "types": types, "description": desc, "enabled": enabled,
			"secretRotatedAt": at, "previousSecretUntil": nil})
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	ev := func(action, key, hook, before, after string) auditlog.Event {
		e := auditlog.Event{Time: at, Actor: "ana@platform", Action: action}
		if key != "" {
			e.KeyID = &key
		}
		if hook != "" {
			e.WebhookID = &hook
		}
		if before != "" {
			e.Before = json.RawMessage(before)
		}
		if after != "" {
			e.After = json.RawMessage(after)
		}
		return e
	}
	cases := []struct {
		ev              auditlog.Event
		subject, change string
	}{
		{ev(auditlog.ActionWebhookCreated, "", ep, "", endpoint("https://erp.example.ao/h", "", false, "invoice.paid")),
			ep, "LIVE https://erp.example.ao/h: invoice.paid; disabled"},
		{ev(auditlog.ActionWebhookUpdated, "", ep, endpoint("https://erp.example.ao/h", "", false, "invoice.paid"),
			endpoint("https://erp2.example.ao/h", "ERP, new host", false, "invoice.paid")),
			ep, `url https://erp.example.ao/h -> https://erp2.example.ao/h; description "" -> "ERP, new host"`},
		{ev(auditlog.ActionWebhookUpdated, "", ep, endpoint("https://erp2.example.ao/h", "", true), endpoint("https://erp2.example.ao/h", "", true)),
			ep, "nothing changed"},
		{ev(auditlog.ActionWebhookSecretRotated, "", ep, endpoint("https://erp2.example.ao/h", "", true), endpoint("https://erp2.example.ao/h", "", true)),
			ep, "new secret; the old one no longer signs"},
		{ev(auditlog.ActionWebhookRecovered, "", ep, "", `{"endpointId":"`+ep+`","since":"2026-03-01T09:30:00Z","queued":1}`),
			ep, "1 delivery (failed) since 2026-03-01T09:30:00Z queued again"},
		{ev(auditlog.ActionWebhookRecovered, "", ep, "", `{"endpointId":"`+ep+`","since":"2026-03-01T09:30:00Z","queued":5,"failed":2,"waiting":3}`),
			ep, "5 deliveries (2 failed, 3 waiting for a retry) since 2026-03-01T09:30:00Z queued again"},
		{ev(auditlog.ActionWebhookDeleted, "", ep, endpoint("https://erp2.example.ao/h", "", true), ""),
			ep, "removed LIVE https://erp2.example.ao/h"},
		{ev(auditlog.ActionKeyRevoked, "key_aaaaaaaaaaaaaaaaaaaa", "", `{"state":"active"}`, `{"state":"revoked"}`),
			"key_aaaaaaaaaaaaaaaaaaaa", "active -> revoked"},
		{ev(auditlog.ActionLimitsReset, "", "", `{"live":{"rate":3,"burst":4,"custom":true},"test":{"rate":5,"burst":10}}`, `{"live":{"rate":50,"burst":100},"test":{"rate":5,"burst":10}}`),
			"—", "LIVE 3/s burst 4 -> 50/s burst 100 (default), TEST 5/s burst 10 (default) -> 5/s burst 10 (default)"},
	}
	var evs []auditlog.Event
	for _, c := range cases {
		evs = append(evs, c.ev)
	}
	var out bytes.Buffer
	printAudit(&out, evs)
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != len(cases)+1 || strings.Join(strings.Fields(lines[0]), " ") != "TIME ACTOR ACTION KEY/ENDPOINT CHANGE" {
		t.Fatalf("audit:\n%s", out.String())
	}
	for i, c := range cases {
		f := strings.SplitN(strings.Join(strings.Fields(lines[i+1]), " "), " ", 5)
		if len(f) != 5 || f[0] != "2026-03-02T09:30:00.000Z" || f[2] != c.ev.Action || f[3] != c.subject || f[4] != c.change {
			t.Errorf("%s: line %q\nwant subject %q and change %q", c.ev.Action, lines[i+1], c.subject, c.change)
		}
	}
}
