package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/admin"
	"github.com/invoicing-ao/gateway/events"
)

// webhooks list names an endpoint's state as the console does: enabled,
// failing (since when) or disabled (and why).
func TestWebhooksListState(t *testing.T) {
	t.Parallel()
	since := time.Date(2026, 3, 10, 14, 5, 0, 0, time.UTC)
	for _, c := range []struct {
		e    events.Webhook
		want string
	}{
		{events.Webhook{ID: "ep_ok", Enabled: true}, "enabled"},
		{events.Webhook{ID: "ep_failing", Enabled: true, Health: events.Health{FailingSince: &since}}, "failing"},
		{events.Webhook{ID: "ep_off", Health: events.Health{FailingSince: &since, DisabledReason: "failing for 5 days"}}, "disabled"},
	} {
		var out bytes.Buffer
		printWebhooks(&out, []admin.WebhookView{{Webhook: c.e}})
		lines := strings.Split(out.String(), "\n")
		header, row := lines[0], lines[1]
		at := strings.Index(header, "STATE")
		if got := strings.Fields(row[at:])[0]; got != c.want {
			t.Errorf("%s: STATE %q, want %q:\n%s", c.e.ID, got, c.want, out.String())
		}
		if c.want == "failing" && !strings.Contains(row, "2026-03-10T14:05:00Z") {
			t.Errorf("%s: no FAILING SINCE:\n%s", c.e.ID, out.String())
		}
	}
}
