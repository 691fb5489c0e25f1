package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/invoicing-ao/gateway/admin"
	auditlog "github.com/invoicing-ao/gateway/audit"
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
		d, err := c.open(ctx)
		if err != nil {
			return err
		}
		defer d.Close()
		all := admin.AuditView{CompanyID: *company, Events: []auditlog.Event{}}
		for {
			v, err := d.admin.CompanyAudit(ctx, *company, since, auditlog.MaxRead)
			if err != nil {
				return err
			}
			all.CompanyID = v.CompanyID
			all.Events = append(all.Events, v.Events...)
			if v.Next == nil {
				break
			}
			since = *v.Next
		}
		if *asJSON {
			return json.NewEncoder(c.stdout).Encode(all)
		}
		printAudit(c.stdout, all.Events)
		return nil
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

func printAudit(w io.Writer, events []auditlog.Event) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tACTOR\tACTION\tKEY\tCHANGE")
	for _, ev := range events {
		key := "-"
		if ev.KeyID != nil {
			key = *ev.KeyID
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", ev.Time.UTC().Format("2006-01-02T15:04:05.000Z"), ev.Actor, ev.Action, key, change(ev))
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

func limitText(l admin.LimitView) string {
	s := fmt.Sprintf("%g/s burst %d", l.Rate, l.Burst)
	if !l.Custom {
		s += " (default)"
	}
	return s
}
