package main

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/invoicing-ao/gateway/backend/gendata"
)

// The webhooks commands, against real PostgreSQL and Redis, as
// docs/operators.md shows them; bad input says what is wrong, exits
// non-zero and changes nothing.
func TestWebhooksCommands(t *testing.T) {
	t.Parallel()
	env := cliEnv(t)
	co := gendata.DemoCompanyA
	const url = "https://93.184.216.34/webhooks"
	checkWebhookRefusals(t, env, co, url)
	epID, eventID := webhookLifecycle(t, env, co, url)
	checkWebhookAudit(t, env, co, url, epID, eventID)
}

// checkWebhookRefusals: a creation or change that cannot be made says what
// is wrong and leaves no endpoint.
func checkWebhookRefusals(t *testing.T, env func(string) string, co, url string) {
	t.Helper()
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"webhooks", "create", "--company", co, "--mode", "TEST", "--url", "https://10.1.2.3/w"}, "gateway: url must point to a public address: 10.1.2.3 is a private address.\n"},
		{[]string{"webhooks", "create", "--company", co, "--mode", "TEST", "--url", "http://93.184.216.34/w"}, "https"},
		{[]string{"webhooks", "create", "--company", co, "--mode", "TEST", "--url", "https:/broken"}, "absolute URL"},
		{[]string{"webhooks", "create", "--company", co, "--mode", "TEST", "--url", url, "--types", "invoice.refunded"}, `--types "invoice.refunded": must be among invoice.issued`},
		{[]string{"webhooks", "create", "--company", co, "--mode", "PROD", "--url", url}, "--mode"},
		{[]string{"webhooks", "create", "--company", co, "--mode", "TEST"}, "--url"},
		{[]string{"webhooks", "create", "--company", "0a5e7c1e-0000-4000-8000-0000000000ff", "--mode", "TEST", "--url", url}, "No company"},
		{[]string{"webhooks", "update", "ep_aaaaaaaaaaaaaaaaaaaaaaaaaa", "--enable"}, "No webhook endpoint ep_aaaaaaaaaaaaaaaaaaaaaaaaaa"},
		{[]string{"webhooks", "update", "ep_aaaaaaaaaaaaaaaaaaaaaaaaaa"}, "nothing to change"},
	} {
		if code, _, errs := gw(t, env, bad.args...); code == 0 || !strings.Contains(strings.ToLower(errs), strings.ToLower(bad.want)) {
			t.Errorf("%v: exit %d, %q; want %q", bad.args, code, errs, bad.want)
		}
	}
	if _, out, _ := gw(t, env, "webhooks", "list", "--company", co, "--json"); strings.TrimSpace(out) != "[]" {
		t.Fatalf("refused creations left endpoints: %s", out)
	}
}

// webhookLifecycle runs an endpoint's commands: create, list, update,
// rotate-secret, test, deliveries, replay, recover, delete (twice); it
// returns the endpoint's id and its test event's.
func webhookLifecycle(t *testing.T, env func(string) string, co, url string) (epID, eventID string) {
	t.Helper()
	code, out, errs := gw(t, env, "webhooks", "create", "--company", co, "--mode", "TEST", "--url", url, "--types", "invoice.paid,invoice.overdue",
		"--description", "ERP", "--json")
	if code != 0 {
		t.Fatalf("create: %d %s", code, errs)
	}
	var ep struct {
		ID, Secret, URL, Mode string
		Types                 []string
	}
	if err := json.Unmarshal([]byte(out), &ep); err != nil || !strings.HasPrefix(ep.Secret, "whsec_") || ep.Mode != "TEST" || len(ep.Types) != 2 {
		t.Fatalf("create --json: %v %s", err, out)
	}
	if _, out, _ := gw(t, env, "webhooks", "deliveries", ep.ID, "--json"); !strings.Contains(out, `"data":[]`) {
		t.Fatalf("deliveries of a new endpoint: %s", out)
	}
	code, out, _ = gw(t, env, "webhooks", "create", "--company", co, "--mode", "LIVE", "--url", url)
	if code != 0 || !strings.Contains(out, "every event type") || !strings.Contains(out, "whsec_") {
		t.Fatalf("create: %d %s", code, out)
	}
	code, out, _ = gw(t, env, "webhooks", "list", "--company", co)
	if code != 0 || !strings.Contains(out, ep.ID) || !strings.Contains(out, "invoice.paid, invoice.overdue") || strings.Contains(out, "whsec_") {
		t.Fatalf("list: %d\n%s", code, out)
	}
	code, out, _ = gw(t, env, "webhooks", "update", ep.ID, "--disable", "--types", "all")
	if code != 0 || !strings.Contains(out, "disabled") || !strings.Contains(out, ep.ID+" is disabled: disabled on request") {
		t.Fatalf("update: %d\n%s", code, out)
	}
	code, out, _ = gw(t, env, "webhooks", "rotate-secret", ep.ID, "--overlap", "2h")
	if code != 0 || !strings.Contains(out, "both signatures until") || !strings.Contains(out, "whsec_") || strings.Contains(out, ep.Secret) {
		t.Fatalf("rotate-secret: %d\n%s", code, out)
	}
	code, out, errs = gw(t, env, "webhooks", "test", ep.ID, "--json")
	var sent struct{ EventID, Type string }
	if code != 0 || json.Unmarshal([]byte(out), &sent) != nil || sent.Type != "webhook.test" {
		t.Fatalf("test: %d %s %s", code, out, errs)
	}
	if code, out, _ = gw(t, env, "webhooks", "deliveries", ep.ID, "--type", "webhook.test", "--state", "pending"); code != 0 || !strings.Contains(out, sent.EventID) {
		t.Fatalf("deliveries: %d\n%s", code, out)
	}
	if code, out, _ = gw(t, env, "webhooks", "replay", ep.ID, sent.EventID); code != 0 || !strings.Contains(out, "Queued "+sent.EventID) {
		t.Fatalf("replay: %d\n%s", code, out)
	}
	if code, out, _ = gw(t, env, "webhooks", "recover", ep.ID, "--since", "24h"); code != 0 || !strings.Contains(out, "Queued 0 deliveries of "+ep.ID) {
		t.Fatalf("recover: %d\n%s", code, out)
	}
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"webhooks", "recover", ep.ID}, "--since"},
		{[]string{"webhooks", "recover", ep.ID, "--since", "last week"}, "--since"},
		{[]string{"webhooks", "replay", ep.ID}, "EVENT_ID"},
		{[]string{"webhooks", "replay", ep.ID, "evt_aaaaaaaaaaaaaaaaaaaaaaaaaa"}, "No event evt_aaaaaaaaaaaaaaaaaaaaaaaaaa was sent to webhook endpoint"},
		{[]string{"webhooks", "replay", "ep_aaaaaaaaaaaaaaaaaaaaaaaaaa", sent.EventID}, "No webhook endpoint"},
		{[]string{"webhooks", "deliveries", ep.ID, "--state", "lost"}, "state"},
	} {
		if code, _, errs := gw(t, env, bad.args...); code == 0 || !strings.Contains(errs, bad.want) {
			t.Errorf("%v: exit %d, %q; want %q", bad.args, code, errs, bad.want)
		}
	}
	if code, out, _ = gw(t, env, "webhooks", "delete", ep.ID); code != 0 || !strings.Contains(out, "Deleted webhook endpoint "+ep.ID) {
		t.Fatalf("delete: %d\n%s", code, out)
	}
	// Deleting again is safe: the same answer, nothing deleted or recorded
	// twice (the audit below has one deletion).
	if code, out, errs = gw(t, env, "webhooks", "delete", ep.ID); code != 0 || !strings.Contains(out, "Deleted webhook endpoint "+ep.ID) {
		t.Fatalf("delete again: %d %s %s", code, out, errs)
	}
	if code, _, errs = gw(t, env, "webhooks", "delete", "ep_aaaaaaaaaaaaaaaaaaaaaaaaaa"); code == 0 || !strings.Contains(errs, "No webhook endpoint ep_aaaaaaaaaaaaaaaaaaaaaaaaaa") {
		t.Fatalf("delete of an endpoint that never was: %d %s", code, errs)
	}
	return ep.ID, sent.EventID
}

// checkWebhookAudit: the audit names the endpoint on each of its lines and
// says what changed, the LIVE endpoint's creation too, never a secret.
func checkWebhookAudit(t *testing.T, env func(string) string, co, url, epID, eventID string) {
	t.Helper()
	code, out, _ := gw(t, env, "audit", "--company", co)
	var lines []string // the endpoint's: action and change
	for _, l := range strings.Split(out, "\n") {
		if f := strings.SplitN(strings.Join(strings.Fields(l), " "), " ", 5); len(f) == 5 && f[3] == epID {
			lines = append(lines, f[2]+" "+f[4])
		}
	}
	want := []*regexp.Regexp{
		regexp.MustCompile(`^webhook\.created TEST ` + regexp.QuoteMeta(url) + `: invoice\.paid, invoice\.overdue; "ERP"$`),
		regexp.MustCompile(`^webhook\.updated types invoice\.paid, invoice\.overdue -> every event type; enabled -> disabled$`),
		regexp.MustCompile(`^webhook\.secret_rotated new secret; the old one signs until \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$`),
		regexp.MustCompile(`^webhook\.tested test event ` + eventID + ` queued$`),
		regexp.MustCompile(`^webhook\.replayed ` + eventID + ` \(webhook\.test\) queued again$`),
		regexp.MustCompile(`^webhook\.recovered 0 deliveries since \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ queued again$`),
		regexp.MustCompile(`^webhook\.deleted removed TEST ` + regexp.QuoteMeta(url) + `$`),
	}
	if code != 0 || len(lines) != len(want) {
		t.Errorf("audit: %d lines of %s, want %d:\n%s", len(lines), epID, len(want), out)
	} else {
		for i, re := range want {
			if !re.MatchString(lines[i]) {
				t.Errorf("audit line %d of %s: %q, want %s", i+1, epID, lines[i], re)
			}
		}
	}
	if !regexp.MustCompile(`(?m)webhook\.created +ep_[a-z2-7]{26} +LIVE ` + regexp.QuoteMeta(url) + `: every event type$`).MatchString(out) {
		t.Errorf("audit does not show the LIVE endpoint's creation:\n%s", out)
	}
	if strings.Contains(out, "whsec_") {
		t.Errorf("the audit log shows a signing secret:\n%s", out)
	}
}
