package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strconv"

	"github.com/invoicing-ao/gateway/admin"
	"github.com/invoicing-ao/gateway/tenants"
)

func limitsGet(company *string, asJSON *bool) action {
	return limitsAction(asJSON, func(ctx context.Context, s *admin.Service) (admin.LimitsView, error) {
		return s.CompanyLimits(ctx, *company)
	})
}

func limitsSetFlags(fs *flag.FlagSet) action {
	company := companyFlag(fs)
	mode := fs.String("mode", "", "`MODE`, LIVE or TEST (default: both)")
	rps := fs.Float64("rps", 0, "sustained requests per second (`N` > 0)")
	burst := fs.Int("burst", 0, "requests allowed at once (`N` >= 1)")
	asJSON := jsonFlag(fs)
	set := limitsAction(asJSON, func(ctx context.Context, s *admin.Service) (admin.LimitsView, error) {
		return s.SetCompanyLimit(ctx, commandActor(), *company, *mode, *rps, *burst)
	})
	return func(ctx context.Context, c *invocation) error {
		if err := (tenants.Limit{Rate: *rps, Burst: 1}).Validate(); err != nil {
			return usagef("--rps %s: %s", strconv.FormatFloat(*rps, 'f', -1, 64), refusal(err))
		}
		if err := (tenants.Limit{Rate: 1, Burst: *burst}).Validate(); err != nil {
			return usagef("--burst %d: %s", *burst, refusal(err))
		}
		if *mode != "" && *mode != "LIVE" && *mode != "TEST" {
			return usagef("--mode %q: must be LIVE or TEST", *mode)
		}
		return set(ctx, c)
	}
}

func limitsReset(company *string, asJSON *bool) action {
	return limitsAction(asJSON, func(ctx context.Context, s *admin.Service) (admin.LimitsView, error) {
		return s.ResetCompanyLimits(ctx, commandActor(), *company)
	})
}

// limitsAction runs op, the one operation of a limits command, and prints
// the company's limits after it.
func limitsAction(asJSON *bool, op func(context.Context, *admin.Service) (admin.LimitsView, error)) action {
	return func(ctx context.Context, c *invocation) error {
		return invoke(ctx, c, *asJSON, func(ctx context.Context, d *deps) (admin.LimitsView, error) {
			return op(ctx, d.admin)
		}, printLimits)
	}
}

// printLimits writes a company's LIVE and TEST limits, each custom or the
// default.
func printLimits(w io.Writer, v admin.LimitsView) error {
	for _, m := range []struct {
		name string
		l    admin.LimitView
	}{{"LIVE", v.Live}, {"TEST", v.Test}} {
		src := "default"
		if m.l.Custom {
			src = "custom"
		}
		fmt.Fprintf(w, "%s  %s rps, burst %d (%s)\n", m.name, strconv.FormatFloat(m.l.Rate, 'f', -1, 64), m.l.Burst, src)
	}
	return nil
}
