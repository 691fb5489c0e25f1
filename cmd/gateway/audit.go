package main

import (
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/invoicing-ao/gateway/admin"
	auditlog "github.com/invoicing-ao/gateway/audit"
	"github.com/invoicing-ao/gateway/events"
)

// auditFlags is `gateway audit`: a company's audit log, oldest first,
// every page of it from --since on.
func auditFlags(fs *flag.FlagSet) action {
	company := companyFlag(fs)
	sinceS := fs.String("since", "", "from this `TIME` on: RFC 3339, a date (YYYY-MM-DD, UTC) or a duration ago (24h, 7d); default: all kept")
	asJSON := jsonFlag(fs)
	return func(ctx context.Context, c *invocation) error {
		since, err := parseSince(*sinceS, time.Now())
		if err != nil {
			return err
		}
		return invoke(ctx, c, *asJSON, func(ctx context.Context, d *deps) (admin.AuditView, error) {
			return readAudit(ctx, d.admin, *company, since)
		}, func(w io.Writer, v admin.AuditView) error {
			if len(v.Events) == 0 {
				what := "in the audit log (kept 400 days)"
				if !since.IsZero() {
					what = "since " + since.UTC().Format(time.RFC3339)
				}
				_, err := fmt.Fprintf(w, "No changes recorded for company %s %s.\n", cmp.Or(v.CompanyID, *company), what)
				return err
			}
			printAudit(w, v.Events)
			return nil
		})
	}
}

// readAudit reads a company's audit log from since on, every page of it.
func readAudit(ctx context.Context, s *admin.Service, company string, since time.Time) (admin.AuditView, error) {
	all := admin.AuditView{CompanyID: company, Events: []auditlog.Event{}}
	for {
		v, err := s.Audit.CompanyAudit(ctx, company, since, auditlog.MaxRead)
		if err != nil {
			return all, err
		}
		all.CompanyID = v.CompanyID
		all.Events = append(all.Events, v.Events...)
		if v.Next == nil {
			return all, nil
		}
		since = *v.Next
	}
}

// parseSince reads --since: an RFC 3339 time, a date, or a duration ago.
func parseSince(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	if d, err := parseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, fmt.Errorf("--since %q: must be an RFC 3339 time, a date YYYY-MM-DD or a duration such as 24h or 7d", s)
}

func printAudit(w io.Writer, evs []auditlog.Event) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tACTOR\tACTION\tKEY/ENDPOINT\tCHANGE")
	for _, ev := range evs {
		subject := none // limits concern the company as a whole
		switch {
		case ev.KeyID != nil:
			subject = *ev.KeyID
		case ev.WebhookID != nil:
			subject = *ev.WebhookID
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", ev.Time.UTC().Format("2006-01-02T15:04:05.000Z"), ev.Actor, ev.Action, subject, change(ev))
	}
	_ = tw.Flush()
}

// change sums up what an event changed, from its before and after views.
func change(ev auditlog.Event) string {
	switch {
	case strings.HasPrefix(ev.Action, "limits."):
		var b, a admin.LimitsView
		_ = json.Unmarshal(ev.Before, &b)
		_ = json.Unmarshal(ev.After, &a)
		return "LIVE " + limitText(b.Live) + " -> " + limitText(a.Live) + ", TEST " + limitText(b.Test) + " -> " + limitText(a.Test)
	case strings.HasPrefix(ev.Action, "webhook."):
		return webhookChange(ev)
	case ev.Action == auditlog.ActionStateImported:
		return importedChange(ev)
	case ev.Action == auditlog.ActionKeyCreated:
		var a admin.KeyView
		_ = json.Unmarshal(ev.After, &a)
		s := a.Mode + " " + strings.Join(a.Scopes, ",") + limitsOf(a)
		if a.Replaces != nil {
			s += ", replacing " + *a.Replaces
		}
		return s
	default:
		var b, a admin.KeyView
		_ = json.Unmarshal(ev.Before, &b)
		_ = json.Unmarshal(ev.After, &a)
		s := b.State + " -> " + a.State
		if a.ReplacedBy != nil && b.ReplacedBy == nil {
			s += ", replaced by " + *a.ReplacedBy
		}
		if a.ExpiresAt != nil && (b.ExpiresAt == nil || !b.ExpiresAt.Equal(*a.ExpiresAt)) {
			s += ", expiring " + a.ExpiresAt.UTC().Format(time.RFC3339)
		}
		return s
	}
}

// auditEndpoint is what the audit log keeps of a webhook endpoint (never
// its secret).
type auditEndpoint struct {
	Mode                string        `json:"mode"`
	URL                 string        `json:"url"`
	Types               []events.Type `json:"types"`
	Description         string        `json:"description"`
	Enabled             bool          `json:"enabled"`
	PreviousSecretUntil *time.Time    `json:"previousSecretUntil"`
}

// auditSend is what the audit log keeps of a delivery sent on request: a
// replay or a test names its event, a recovery its time and count.
type auditSend struct {
	EventID string    `json:"eventId"`
	Type    string    `json:"type"`
	Since   time.Time `json:"since"`
	Queued  int       `json:"queued"`
	Failed  int       `json:"failed"`
	Waiting int       `json:"waiting"`
}

// webhookChange sums up a webhook action: the endpoint created or removed,
// the fields a change changed, the secret's overlap, or what was queued
// again (the event, or how many deliveries, failed and waiting).
func webhookChange(ev auditlog.Event) string {
	var b, a auditEndpoint
	_ = json.Unmarshal(ev.Before, &b)
	_ = json.Unmarshal(ev.After, &a)
	var sent auditSend
	_ = json.Unmarshal(ev.After, &sent)
	switch ev.Action {
	case auditlog.ActionWebhookCreated:
		s := a.Mode + " " + a.URL + ": " + describeTypes(a.Types)
		if a.Description != "" {
			s += "; " + strconv.Quote(a.Description)
		}
		if !a.Enabled {
			s += "; disabled"
		}
		return s
	case auditlog.ActionWebhookUpdated:
		var parts []string
		if b.URL != a.URL {
			parts = append(parts, "url "+b.URL+" -> "+a.URL)
		}
		if bt, at := describeTypes(b.Types), describeTypes(a.Types); bt != at {
			parts = append(parts, "types "+bt+" -> "+at)
		}
		if b.Description != a.Description {
			parts = append(parts, "description "+strconv.Quote(b.Description)+" -> "+strconv.Quote(a.Description))
		}
		if b.Enabled != a.Enabled {
			parts = append(parts, enabledText(b.Enabled)+" -> "+enabledText(a.Enabled))
		}
		if len(parts) == 0 {
			return "nothing changed"
		}
		return strings.Join(parts, "; ")
	case auditlog.ActionWebhookSecretRotated:
		if a.PreviousSecretUntil != nil {
			return "new secret; the old one signs until " + a.PreviousSecretUntil.UTC().Format(time.RFC3339)
		}
		return "new secret; the old one no longer signs"
	case auditlog.ActionWebhookDeleted:
		return "removed " + b.Mode + " " + b.URL
	case auditlog.ActionWebhookReplayed:
		return sent.EventID + " (" + sent.Type + ") queued again"
	case auditlog.ActionWebhookRecovered:
		return recoveredText(sent.Queued, sent.Failed, sent.Waiting) + " since " + sent.Since.UTC().Format(time.RFC3339) + " queued again"
	case auditlog.ActionWebhookTested:
		return "test event " + sent.EventID + " queued"
	}
	return none
}

func enabledText(on bool) string {
	if on {
		return "enabled"
	}
	return "disabled"
}

func limitText(l admin.LimitView) string {
	s := fmt.Sprintf("%g/s burst %d", l.Rate, l.Burst)
	if !l.Custom {
		s += " (default)"
	}
	return s
}
