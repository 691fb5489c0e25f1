package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/invoicing-ao/gateway/admin"
)

// usageShow prints a company's requests per day, by mode and status class,
// as counted by every gateway instance (the counts of the last second of
// each running instance may not be there yet).
func usageShow(company *string, days *int, asJSON *bool) action {
	return func(ctx context.Context, c *invocation) error {
		return invoke(ctx, c, *asJSON, func(ctx context.Context, d *deps) (admin.UsageView, error) {
			return d.admin.Usage.CompanyUsage(ctx, *company, *days)
		}, printUsage)
	}
}

func printUsage(w io.Writer, v admin.UsageView) error {
	fmt.Fprintf(w, "company %s, requests per day (Luanda)\n", v.CompanyID)
	for _, day := range v.Days {
		fmt.Fprintf(w, "%s  %6d", day.Date, day.Total)
		for _, m := range []struct {
			name    string
			classes map[string]int64
		}{{"LIVE", day.Live}, {"TEST", day.Test}} {
			if len(m.classes) == 0 {
				continue
			}
			parts := make([]string, 0, len(m.classes))
			for _, cl := range slices.Sorted(maps.Keys(m.classes)) {
				parts = append(parts, fmt.Sprintf("%s=%d", cl, m.classes[cl]))
			}
			fmt.Fprintf(w, "  %s %s", m.name, strings.Join(parts, " "))
		}
		fmt.Fprintln(w)
	}
	return nil
}
