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
	"github.com/invoicing-ao/gateway/shape"
)

// limits whatif, shape and headroom: a company's recorded traffic against
// a limit, before the limit is set.

func limitsWhatIfFlags(fs *flag.FlagSet) action {
	company := companyFlag(fs)
	mode := fs.String("mode", "", "`MODE`, LIVE or TEST")
	rate := fs.Float64("rate", 0, "the proposed sustained requests per second (`N` > 0)")
	burst := fs.Int("burst", 0, "the proposed requests allowed at once (`N` >= 1)")
	since := sinceFlag(fs)
	maxRefused := fs.Float64("max-refused", 100*admin.DefaultMaxRefused, "the `PERCENT` of requests the smallest burst looked for may refuse")
	asJSON := jsonFlag(fs)
	return func(ctx context.Context, c *invocation) error {
		from, err := windowFlag(*since, time.Now())
		if err != nil {
			return err
		}
		if err := checkLimitFlags(*mode, false, *rate, *burst); err != nil {
			return err
		}
		if !(*maxRefused >= 0 && *maxRefused < 100) {
			return usagef("--max-refused %s: must be a percent from 0 to below 100", strconv.FormatFloat(*maxRefused, 'f', -1, 64))
		}
		q := admin.WhatIfQuery{CompanyID: *company, Mode: *mode, Rate: *rate, Burst: *burst, Since: from, MaxRefused: *maxRefused / 100}
		return invoke(ctx, c, *asJSON, func(ctx context.Context, d *deps) (admin.WhatIfView, error) {
			return d.admin.Limits.WhatIf(ctx, q)
		}, func(w io.Writer, v admin.WhatIfView) error {
			printWhatIf(w, v)
			return nil
		})
	}
}

// windowFlag reads --since for a what-if or a shape: at most 30 days ago
// (a minute more is read from 30 days ago, as the admin API does).
func windowFlag(since string, now time.Time) (time.Time, error) {
	from, err := parseSince(since, now)
	switch {
	case err != nil:
		return time.Time{}, usagef("%v", err)
	case !from.Before(now) || from.Before(now.Add(-shape.MaxWindow-time.Minute)):
		return time.Time{}, usagef("--since %q: must be within the last 30 days", since)
	}
	return from, nil
}

func sinceFlag(fs *flag.FlagSet) *string {
	return fs.String("since", "24h", "from this `TIME` until now: a duration ago (24h, 7d), an RFC 3339 time or a date (YYYY-MM-DD, UTC); at most 30 days ago")
}

func printWhatIf(w io.Writer, v admin.WhatIfView) {
	if v.Offered == 0 {
		fmt.Fprintf(w, "company %s, %s, %s to %s: no requests recorded, nothing to refuse\n", v.CompanyID, v.Mode, minuteUTC(v.From), minuteUTC(v.To))
		return
	}
	fmt.Fprintf(w, "company %s, %s, %s to %s: %s requests offered\n", v.CompanyID, v.Mode, minuteUTC(v.From), minuteUTC(v.To), group(v.Offered))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, o := range []struct {
		what string
		o    admin.Outcome
	}{{"with", v.Proposed}, {"in force", v.Current}} {
		name := fmt.Sprintf("%s %s rps, burst %d", o.what, strconv.FormatFloat(o.o.Rate, 'f', -1, 64), o.o.Burst)
		if o.what == "in force" && !o.o.Custom {
			name += " (default)"
		}
		res := refusals(o.o)
		if o.o.Recorded {
			res += " (as recorded)"
		}
		fmt.Fprintf(tw, "%s:\t%s\n", name, res)
	}
	_ = tw.Flush()
	fit := v.SmallestBurst
	share := strconv.FormatFloat(100*fit.MaxRefusedShare, 'f', -1, 64) + " %"
	rate := strconv.FormatFloat(v.Proposed.Rate, 'f', -1, 64)
	switch {
	case fit.TooFewRequests:
		fmt.Fprintf(w, "no smallest burst looked for: %s requests recorded, too few to say (%d at least)\n", group(v.Offered), admin.MinFitRequests)
	case fit.Burst == nil:
		fmt.Fprintf(w, "no burst up to 100000 refuses at most %s at %s rps\n", share, rate)
	default:
		fmt.Fprintf(w, "smallest burst refusing at most %s at %s rps: %d (%s refused)\n", share, rate, *fit.Burst, group(fit.Refused))
	}
	for _, a := range v.Approximate {
		switch a {
		case "summarized":
			fmt.Fprintf(w, "approximate: the %s seconds older than 48 hours are estimated from per-minute summaries\n", group(int64(v.SummarizedSeconds)))
		case "retries":
			fmt.Fprintln(w, "approximate: requests were refused, and their clients' retries are in the traffic replayed")
		case "short_bursts":
			fmt.Fprintf(w, "approximate: %s shorter than 125 ms, each refused up to what the rate refills in 62.5 ms more or less than said\n",
				plural(v.ShortBursts, "burst", "bursts"))
		}
	}
}

// refusals sums up what a limit would have refused.
func refusals(o admin.Outcome) string {
	if o.Refused == 0 {
		return "none refused"
	}
	s := fmt.Sprintf("%s refused (%.2f %%) in %s, %s", group(o.Refused), 100*o.RefusedShare, plural(o.RefusedSeconds, "second", "seconds"), plural(o.RefusedMinutes, "minute", "minutes"))
	if m := o.WorstMinute; m != nil {
		s += fmt.Sprintf("; worst minute %s, %s refused of %s", minuteUTC(m.Start), group(m.Refused), group(m.Offered))
	}
	return s
}

func limitsShapeFlags(fs *flag.FlagSet) action {
	company := companyFlag(fs)
	mode := fs.String("mode", "", "`MODE`, LIVE or TEST")
	since := sinceFlag(fs)
	asJSON := jsonFlag(fs)
	return func(ctx context.Context, c *invocation) error {
		from, err := windowFlag(*since, time.Now())
		if err != nil {
			return err
		}
		if m := strings.ToUpper(*mode); m != "LIVE" && m != "TEST" {
			return usagef("--mode %q: must be LIVE or TEST", *mode)
		}
		return invoke(ctx, c, *asJSON, func(ctx context.Context, d *deps) (admin.ShapeView, error) {
			return d.admin.Limits.TrafficShape(ctx, *company, *mode, from)
		}, printShape)
	}
}

// printShape writes a company's busy seconds hour by hour, beside its
// limit: the hours with requests only, and how many were idle.
func printShape(w io.Writer, v admin.ShapeView) error {
	custom := "default"
	if v.Limit.Custom {
		custom = "custom"
	}
	limit := fmt.Sprintf("limit %s rps, burst %d (%s)", strconv.FormatFloat(v.Limit.Rate, 'f', -1, 64), v.Limit.Burst, custom)
	if v.Window.BusySeconds == 0 {
		fmt.Fprintf(w, "company %s, %s, %s: no requests recorded from %s to %s\n", v.CompanyID, v.Mode, limit, minuteUTC(v.From), minuteUTC(v.To))
		return nil
	}
	fmt.Fprintf(w, "company %s, %s, %s; requests per second of the busy seconds\n", v.CompanyID, v.Mode, limit)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "hour (UTC)\trequests\tbusy seconds\tp50\tp99\tmax\t")
	row := func(name string, h shape.Rates) {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t\n", name, group(h.Requests), h.BusySeconds, h.P50, h.P99, h.Max)
	}
	idle := 0
	for _, h := range v.Hours {
		if h.BusySeconds == 0 {
			idle++
			continue
		}
		row(h.Start.UTC().Format("2006-01-02 15:04"), h)
	}
	row("all", v.Window)
	_ = tw.Flush()
	if idle > 0 {
		fmt.Fprintf(w, "%s without requests left out, of %d from %s to %s\n", plural(idle, "hour", "hours"), len(v.Hours), minuteUTC(v.From), minuteUTC(v.To))
	}
	if v.SummarizedSeconds > 0 {
		fmt.Fprintf(w, "approximate: the %s seconds older than 48 hours are estimated from per-minute summaries\n", group(int64(v.SummarizedSeconds)))
	}
	return nil
}

func limitsHeadroomFlags(fs *flag.FlagSet) action {
	mode := fs.String("mode", "LIVE", "`MODE`, LIVE or TEST")
	top := fs.Int("top", 10, "list `N` companies of each kind (1 to 100)")
	asJSON := jsonFlag(fs)
	return func(ctx context.Context, c *invocation) error {
		if m := strings.ToUpper(*mode); m != "LIVE" && m != "TEST" {
			return usagef("--mode %q: must be LIVE or TEST", *mode)
		}
		if *top < 1 || *top > 100 {
			return usagef("--top %d: must be 1 to 100", *top)
		}
		return invoke(ctx, c, *asJSON, func(ctx context.Context, d *deps) (admin.HeadroomView, error) {
			return d.admin.Limits.LimitHeadroom(ctx, *mode, *top)
		}, printHeadroom)
	}
}

// printHeadroom writes the companies nearest their limit, and those far
// below it.
func printHeadroom(w io.Writer, v admin.HeadroomView) error {
	if v.Companies == 0 {
		fmt.Fprintf(w, "%s: no company with traffic today or yesterday (Luanda)\n", v.Mode)
		return nil
	}
	fmt.Fprintf(w, "%s: %s with traffic today or yesterday (Luanda); each one's p99 busy second against its limit's rate\n", v.Mode, plural(v.Companies, "company", "companies"))
	for _, part := range []struct {
		title string
		list  []admin.Headroom
	}{{"nearest their limit", v.Nearest}, {fmt.Sprintf("far below it (%g %% of the rate or less)", 100*admin.FarBelowShare), v.FarBelow}} {
		if len(part.list) == 0 {
			fmt.Fprintf(w, "%s: none\n", part.title)
			continue
		}
		fmt.Fprintf(w, "%s:\n", part.title)
		for _, h := range part.list {
			fmt.Fprintf(w, "  %s  p99 busy second %d requests, limit %s rps (burst %d): %.0f %% of the rate\n",
				h.CompanyID, h.P99, strconv.FormatFloat(h.Limit.Rate, 'f', -1, 64), h.Limit.Burst, 100*h.Share)
		}
	}
	return nil
}

func minuteUTC(t time.Time) string { return t.UTC().Format("2006-01-02 15:04") + " UTC" }
