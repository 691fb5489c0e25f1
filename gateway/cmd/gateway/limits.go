package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strconv"

	"github.com/invoicing-ao/gateway/gateway"
)

func cmdLimits(ctx context.Context, args []string, stdout, stderr io.Writer, env func(string) string) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: limits needs get, set or reset", errUsage)
	}
	fs := flag.NewFlagSet("limits "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	load := configFlag(fs, env)
	company := fs.String("company", "", "company id")
	mode := fs.String("mode", "", "LIVE or TEST (default: both)")
	rps := fs.Float64("rps", 0, "sustained requests per second")
	burst := fs.Int("burst", 0, "requests allowed at once")
	asJSON := fs.Bool("json", false, "print JSON")
	pos, err := parseFlags(fs, args[1:])
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, pos[0])
	}
	if *company == "" {
		return fmt.Errorf("%w: limits %s needs --company", errUsage, args[0])
	}
	var run func(d *deps) (gateway.LimitsView, error)
	switch args[0] {
	case "get":
		run = func(d *deps) (gateway.LimitsView, error) { return d.server.CompanyLimits(ctx, *company) }
	case "set":
		if *rps <= 0 || *burst < 1 {
			return fmt.Errorf("%w: limits set needs --rps > 0 and --burst >= 1", errUsage)
		}
		if *mode != "" && *mode != "LIVE" && *mode != "TEST" {
			return fmt.Errorf("--mode %q: must be LIVE or TEST", *mode)
		}
		run = func(d *deps) (gateway.LimitsView, error) {
			return d.server.SetCompanyLimit(ctx, commandActor(), *company, *mode, *rps, *burst)
		}
	case "reset":
		run = func(d *deps) (gateway.LimitsView, error) {
			return d.server.ResetCompanyLimits(ctx, commandActor(), *company)
		}
	default:
		return fmt.Errorf("%w: unknown limits command %q", errUsage, args[0])
	}
	d, err := management(ctx, load, stderr)
	if err != nil {
		return err
	}
	defer d.Close()
	v, err := run(d)
	if err != nil {
		return err
	}
	if *asJSON {
		return json.NewEncoder(stdout).Encode(v)
	}
	for _, m := range []struct {
		name string
		l    gateway.LimitView
	}{{"LIVE", v.Live}, {"TEST", v.Test}} {
		src := "default"
		if m.l.Custom {
			src = "custom"
		}
		fmt.Fprintf(stdout, "%s  %s rps, burst %d (%s)\n", m.name, strconv.FormatFloat(m.l.Rate, 'f', -1, 64), m.l.Burst, src)
	}
	return nil
}
