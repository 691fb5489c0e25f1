package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/invoicing-ao/gateway/admin"
	"github.com/invoicing-ao/gateway/events"
	"github.com/invoicing-ao/gateway/invoicing"
)

// The webhooks commands: a company's endpoints, as the admin API manages
// them (admin/webhooks.go), recorded in the audit log with the command
// line's actor.

// typesFlag reads --types: a comma-separated list of event types, or "all".
func typesFlag(fs *flag.FlagSet) *string {
	return fs.String("types", "", "comma-separated event types (`LIST`: "+strings.Join(typeNames(), ", ")+"), or all")
}

func typeNames() []string {
	out := make([]string, len(events.Types))
	for i, t := range events.Types {
		out[i] = string(t)
	}
	return out
}

// parseTypesFlag reads --types's value: nil for every type.
func parseTypesFlag(s string) ([]string, error) {
	if s == "" || s == "all" {
		return nil, nil
	}
	types := strings.Split(s, ",")
	if _, err := events.ParseTypes(types); err != nil {
		return nil, usagef("--types %q: %s", s, refusal(err))
	}
	return types, nil
}

func webhooksCreateFlags(fs *flag.FlagSet) action {
	company := companyFlag(fs)
	modeS := fs.String("mode", "", "`MODE`: LIVE (live data's events) or TEST (the sandbox's)")
	url := fs.String("url", "", "where events are POSTed (`URL`, https)")
	typesS := typesFlag(fs)
	description := fs.String("description", "", "what the endpoint is for (`TEXT`)")
	disabled := fs.Bool("disabled", false, "create it disabled: events wait until it is enabled")
	asJSON := jsonFlag(fs)
	quiet := fs.Bool("quiet", false, "print the signing secret only, for scripts")
	return func(ctx context.Context, c *invocation) error {
		mode, err := invoicing.ParseMode(*modeS)
		if err != nil {
			return usagef("--mode %q: must be LIVE or TEST", *modeS)
		}
		types, err := parseTypesFlag(*typesS)
		if err != nil {
			return err
		}
		if *asJSON && *quiet {
			return usagef("--json and --quiet exclude each other")
		}
		spec := admin.WebhookSpec{CompanyID: *company, Mode: mode, URL: *url, Types: types, Description: *description, Disabled: *disabled}
		return invoke(ctx, c, *asJSON, func(ctx context.Context, d *deps) (admin.WebhookView, error) {
			return d.admin.Webhooks.CreateWebhook(ctx, commandActor(), spec)
		}, func(w io.Writer, v admin.WebhookView) error {
			if *quiet {
				_, err := fmt.Fprintln(w, v.Secret)
				return err
			}
			fmt.Fprintf(w, "Created webhook endpoint %s (%s) for company %s: %s, %s.\n", v.ID, v.Mode, v.CompanyID, v.URL, describeTypes(v.Types))
			fmt.Fprintf(w, "Signing secret (shown this once; store it now):\n%s\n", v.Secret)
			return nil
		})
	}
}

func describeTypes(types []events.Type) string {
	if len(types) == 0 {
		return "every event type"
	}
	s := make([]string, len(types))
	for i, t := range types {
		s[i] = string(t)
	}
	return strings.Join(s, ", ")
}

func webhooksList(company *string, asJSON *bool) action {
	return func(ctx context.Context, c *invocation) error {
		return invoke(ctx, c, *asJSON, func(ctx context.Context, d *deps) ([]admin.WebhookView, error) {
			return d.admin.Webhooks.ListWebhooks(ctx, *company)
		}, func(w io.Writer, eps []admin.WebhookView) error {
			if len(eps) == 0 {
				_, err := fmt.Fprintf(w, "No webhook endpoints for company %s.\n", *company)
				return err
			}
			printWebhooks(w, eps)
			return nil
		})
	}
}

func printWebhooks(w io.Writer, eps []admin.WebhookView) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tMODE\tURL\tTYPES\tSTATE\tLAST SUCCESS\tFAILING SINCE\tDESCRIPTION")
	for _, e := range eps {
		state := webhookState(e)
		types := "all"
		if len(e.Types) > 0 {
			types = describeTypes(e.Types)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", e.ID, e.Mode, e.URL, types, state,
			stampOr(e.Health.LastSuccessAt, "never"), stampOr(e.Health.FailingSince, none), orDash(e.Description))
	}
	_ = tw.Flush()
	for _, e := range eps {
		if e.Health.DisabledReason != "" {
			fmt.Fprintf(w, "%s is disabled: %s\n", e.ID, e.Health.DisabledReason)
		}
	}
}

// webhookState is an endpoint's state in the console's words: disabled,
// failing (its deliveries fail since FAILING SINCE), or enabled.
func webhookState(e admin.WebhookView) string {
	switch {
	case !e.Enabled:
		return "disabled"
	case e.Health.FailingSince != nil:
		return "failing"
	}
	return "enabled"
}

func stampOr(t *time.Time, none string) string {
	if t == nil {
		return none
	}
	return t.UTC().Format(time.RFC3339)
}

func webhooksUpdateFlags(fs *flag.FlagSet) action {
	url := fs.String("url", "", "a new `URL`")
	typesS := typesFlag(fs)
	description := fs.String("description", "", "a new description (`TEXT`)")
	enable := fs.Bool("enable", false, "enable the endpoint: the events that waited are delivered")
	disable := fs.Bool("disable", false, "disable the endpoint: events wait (up to the retention) until it is enabled")
	asJSON := jsonFlag(fs)
	return func(ctx context.Context, c *invocation) error {
		var p events.Patch
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		if set["url"] {
			p.URL = url
		}
		if set["description"] {
			p.Description = description
		}
		if set["types"] {
			types, err := parseTypesFlag(*typesS)
			if err != nil {
				return err
			}
			if types == nil {
				types = []string{}
			}
			p.Types = &types
		}
		switch {
		case *enable && *disable:
			return usagef("--enable and --disable exclude each other")
		case *enable:
			p.Enabled = enable
		case *disable:
			off := false
			p.Enabled = &off
		}
		if p.URL == nil && p.Types == nil && p.Description == nil && p.Enabled == nil {
			return usagef("nothing to change: give --url, --types, --description, --enable or --disable")
		}
		return invoke(ctx, c, *asJSON, func(ctx context.Context, d *deps) (admin.WebhookView, error) {
			return d.admin.Webhooks.UpdateWebhook(ctx, commandActor(), c.args[0], p)
		}, func(w io.Writer, v admin.WebhookView) error {
			printWebhooks(w, []admin.WebhookView{v})
			return nil
		})
	}
}

func webhooksRotateFlags(fs *flag.FlagSet) action {
	overlap := fs.Duration("overlap", events.DefaultOverlap, "how long the old secret keeps signing beside the new one (`DURATION`; 0: it stops now)")
	asJSON := jsonFlag(fs)
	quiet := fs.Bool("quiet", false, "print the new signing secret only, for scripts")
	return func(ctx context.Context, c *invocation) error {
		if *asJSON && *quiet {
			return usagef("--json and --quiet exclude each other")
		}
		return invoke(ctx, c, *asJSON, func(ctx context.Context, d *deps) (admin.WebhookView, error) {
			return d.admin.Webhooks.RotateWebhookSecret(ctx, commandActor(), c.args[0], *overlap)
		}, func(w io.Writer, v admin.WebhookView) error {
			if *quiet {
				_, err := fmt.Fprintln(w, v.Secret)
				return err
			}
			fmt.Fprintf(w, "Rotated the signing secret of %s.\n", v.ID)
			if v.PreviousSecretUntil != nil {
				fmt.Fprintf(w, "Deliveries carry both signatures until %s.\n", v.PreviousSecretUntil.UTC().Format(time.RFC3339))
			}
			fmt.Fprintf(w, "New signing secret (shown this once; store it now):\n%s\n", v.Secret)
			return nil
		})
	}
}

func webhooksDelete(asJSON *bool) action {
	return func(ctx context.Context, c *invocation) error {
		return invoke(ctx, c, *asJSON, func(ctx context.Context, d *deps) (admin.WebhookView, error) {
			return d.admin.Webhooks.DeleteWebhook(ctx, commandActor(), c.args[0])
		}, func(w io.Writer, v admin.WebhookView) error {
			fmt.Fprintf(w, "Deleted webhook endpoint %s (%s, %s) and what waited for it.\n", v.ID, v.Mode, v.URL)
			return nil
		})
	}
}

func webhooksDeliveriesFlags(fs *flag.FlagSet) action {
	limit := fs.Int("limit", 20, fmt.Sprintf("show the newest `N` deliveries (1 to %d)", events.MaxDeliveriesPage))
	state := fs.String("state", "", "only deliveries in this `STATE`: "+strings.Join(events.DeliveryStates, ", "))
	typ := fs.String("type", "", "only events of this `TYPE`")
	asJSON := jsonFlag(fs)
	return func(ctx context.Context, c *invocation) error {
		if *limit < 1 || *limit > events.MaxDeliveriesPage {
			return usagef("--limit %d: must be 1 to %d", *limit, events.MaxDeliveriesPage)
		}
		q := events.DeliveryQuery{Limit: *limit, State: *state, Type: events.Type(*typ)}
		return invoke(ctx, c, *asJSON, func(ctx context.Context, d *deps) (admin.DeliveriesView, error) {
			return d.admin.Deliveries.WebhookDeliveries(ctx, c.args[0], q)
		}, func(w io.Writer, v admin.DeliveriesView) error {
			if len(v.Data) > 0 {
				return printDeliveries(w, v)
			}
			var filters []string
			if *state != "" {
				filters = append(filters, "--state "+*state)
			}
			if *typ != "" {
				filters = append(filters, "--type "+*typ)
			}
			if len(filters) > 0 {
				_, err := fmt.Fprintf(w, "No deliveries of endpoint %s match %s.\n", c.args[0], strings.Join(filters, " "))
				return err
			}
			_, err := fmt.Fprintf(w, "No deliveries for endpoint %s yet.\n", c.args[0])
			return err
		})
	}
}

// printDeliveries writes a page of deliveries, each with its last answer.
func printDeliveries(w io.Writer, v admin.DeliveriesView) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "EVENT\tTYPE\tRESOURCE\tSTATE\tATTEMPTS\tQUEUED\tLAST ANSWER")
	for _, dl := range v.Data {
		last := none
		if n := len(dl.Log); n > 0 {
			a := dl.Log[n-1]
			last = fmt.Sprintf("%d %.0fms", a.Status, a.Latency)
			if a.Error != "" {
				last += " " + a.Error
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\n", dl.EventID, dl.Type, dl.ResourceID, dl.State, dl.Attempts,
			dl.QueuedAt.UTC().Format(time.RFC3339), last)
	}
	return tw.Flush()
}

func webhooksReplay(asJSON *bool) action {
	return func(ctx context.Context, c *invocation) error {
		return invoke(ctx, c, *asJSON, func(ctx context.Context, d *deps) (events.Delivery, error) {
			return d.admin.Deliveries.ReplayWebhook(ctx, commandActor(), c.args[0], c.args[1])
		}, func(w io.Writer, v events.Delivery) error {
			fmt.Fprintf(w, "Queued %s (%s) for %s again, now, with its id.\n", v.EventID, v.Type, c.args[0])
			return nil
		})
	}
}

func webhooksRecoverFlags(fs *flag.FlagSet) action {
	since := fs.String("since", "", "send again the deliveries queued since `TIME` that failed or wait for a retry (RFC 3339, YYYY-MM-DD, or a duration ago: 24h, 7d)")
	asJSON := jsonFlag(fs)
	return func(ctx context.Context, c *invocation) error {
		from, err := parseSince(*since, time.Now())
		if err != nil {
			return err
		}
		return invoke(ctx, c, *asJSON, func(ctx context.Context, d *deps) (admin.RecoveredView, error) {
			return d.admin.Deliveries.RecoverWebhook(ctx, commandActor(), c.args[0], from)
		}, func(w io.Writer, v admin.RecoveredView) error {
			fmt.Fprintf(w, "Queued %s of %s since %s again, now.\n", recoveredText(v.Queued, v.Failed, v.Waiting), v.EndpointID, v.Since.Format(time.RFC3339))
			return nil
		})
	}
}

// recoveredText says what a recovery queued: "3 deliveries (2 failed, 1
// waiting for a retry)".
func recoveredText(queued, failed, waiting int) string {
	if failed+waiting != queued { // an audit entry of an earlier version, whose recoveries took failed deliveries only
		failed = queued
	}
	if queued == 1 {
		if failed == 1 {
			return "1 delivery (failed)"
		}
		return "1 delivery (waiting for a retry)"
	}
	s := plural(queued, "delivery", "deliveries")
	if queued == 0 {
		return s
	}
	return s + " (" + strconv.Itoa(failed) + " failed, " + strconv.Itoa(waiting) + " waiting for a retry)"
}

func webhooksTest(asJSON *bool) action {
	return func(ctx context.Context, c *invocation) error {
		return invoke(ctx, c, *asJSON, func(ctx context.Context, d *deps) (admin.TestSentView, error) {
			return d.admin.Deliveries.TestWebhook(ctx, commandActor(), c.args[0])
		}, func(w io.Writer, v admin.TestSentView) error {
			fmt.Fprintf(w, "Queued a test delivery (%s, %s) to %s; see it with: gateway webhooks deliveries %s\n", v.Type, v.EventID, v.EndpointID, v.EndpointID)
			return nil
		})
	}
}
