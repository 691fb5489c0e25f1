package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/invoicing-ao/gateway/gateway"
)

// cmdUsage prints a company's requests per day, by mode and status class,
// as counted by every gateway instance (the counts of the last second of
// each running instance may not be there yet).
func cmdUsage(ctx context.Context, args []string, stdout, stderr io.Writer, env func(string) string) error {
	fs := flag.NewFlagSet("usage", flag.ContinueOnError)
	fs.SetOutput(stderr)
	load := configFlag(fs, env)
	company := fs.String("company", "", "company id")
	days := fs.Int("days", gateway.DefaultUsageDays, "how many days, today included")
	asJSON := fs.Bool("json", false, "print JSON")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, pos[0])
	}
	if *company == "" {
		return fmt.Errorf("%w: usage needs --company", errUsage)
	}
	d, err := management(ctx, load, stderr)
	if err != nil {
		return err
	}
	defer d.Close()
	v, err := d.server.CompanyUsage(ctx, *company, *days)
	if err != nil {
		return err
	}
	if *asJSON {
		return json.NewEncoder(stdout).Encode(v)
	}
	fmt.Fprintf(stdout, "company %s, requests per day (Luanda)\n", v.CompanyID)
	for _, day := range v.Days {
		fmt.Fprintf(stdout, "%s  %6d", day.Date, day.Total)
		for _, m := range []struct {
			name    string
			classes map[string]int64
		}{{"LIVE", day.Live}, {"TEST", day.Test}} {
			if len(m.classes) == 0 {
				continue
			}
			parts := make([]string, 0, len(m.classes))
			for _, c := range slices.Sorted(maps.Keys(m.classes)) {
				parts = append(parts, fmt.Sprintf("%s=%d", c, m.classes[c]))
			}
			fmt.Fprintf(stdout, "  %s %s", m.name, strings.Join(parts, " "))
		}
		fmt.Fprintln(stdout)
	}
	return nil
}
