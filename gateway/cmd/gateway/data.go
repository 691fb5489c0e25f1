package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/invoicing-ao/gateway/backend"
	"github.com/invoicing-ao/gateway/backend/gendata"
)

// cmdData loads the platform schema and generated data: the demo's small set
// into the configured live and sandbox databases, or the platform-scale set
// into one PostgreSQL database for performance work.
func cmdData(ctx context.Context, args []string, stdout, stderr io.Writer, env func(string) string) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: data needs schema or load", errUsage)
	}
	fs := flag.NewFlagSet("data "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	load := configFlag(fs, env)
	db := fs.String("database", "", "database URL (default: the configured live and sandbox databases)")
	size := fs.String("size", "small", "small (demo data, live and sandbox) or large (platform scale, one PostgreSQL database)")
	seed := fs.Int64("seed", 1, "generator seed; the same seed makes the same data")
	pos, err := parseFlags(fs, args[1:])
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, pos[0])
	}
	targets := func() ([]string, error) {
		if *db != "" {
			return []string{*db}, nil
		}
		cfg, err := load()
		if err != nil {
			return nil, err
		}
		return []string{cfg.LiveDatabaseURL, cfg.TestDatabaseURL}, nil
	}
	switch args[0] {
	case "schema":
		urls, err := targets()
		if err != nil {
			return err
		}
		for _, u := range urls {
			if err := backend.ApplySchema(ctx, u); err != nil {
				return fmt.Errorf("%s: %w", redactURL(u), err)
			}
			fmt.Fprintf(stdout, "schema loaded into %s\n", redactURL(u))
		}
		return nil
	case "load":
		start := time.Now()
		switch *size {
		case "small":
			urls, err := targets()
			if err != nil {
				return err
			}
			if len(urls) != 2 {
				return fmt.Errorf("%w: --size small loads the live and the sandbox database together (configure both instead of --database)", errUsage)
			}
			if _, err := gendata.LoadSmall(ctx, urls[0], urls[1], *seed); err != nil {
				return err
			}
		case "large":
			if *db == "" {
				return fmt.Errorf("%w: --size large needs --database with a postgres:// URL", errUsage)
			}
			if err := gendata.LoadLarge(ctx, *db, *seed, gendata.DefaultLargeSpec, stdout); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%w: --size must be small or large", errUsage)
		}
		fmt.Fprintf(stdout, "%s data loaded in %s\n", *size, time.Since(start).Round(time.Second))
		return nil
	}
	return fmt.Errorf("%w: unknown data command %q", errUsage, args[0])
}
