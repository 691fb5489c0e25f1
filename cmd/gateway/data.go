package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/invoicing-ao/gateway/backend"
	"github.com/invoicing-ao/gateway/backend/gendata"
	"github.com/invoicing-ao/gateway/cmd/gateway/internal/config"
)

// The data commands load the platform schema and generated data: the demo's
// small set into the configured live and sandbox databases, or the
// platform-scale set into one PostgreSQL database for performance work.

// dataTargets is --database when given, else the configured live and
// sandbox databases.
func dataTargets(c *invocation, db string) ([]string, error) {
	if db != "" {
		return []string{db}, nil
	}
	cfg, err := c.config()
	if err != nil {
		return nil, err
	}
	return []string{cfg.LiveDatabaseURL, cfg.TestDatabaseURL}, nil
}

func dataSchema(db *string) action {
	return func(ctx context.Context, c *invocation) error {
		urls, err := dataTargets(c, *db)
		if err != nil {
			return err
		}
		for i, u := range urls {
			err := backend.ApplySchema(ctx, u)
			switch table := duplicateTable(err); {
			case err == nil:
				fmt.Fprintf(c.stdout, "schema loaded into %s\n", config.RedactURL(u))
			case table == "":
				return dataError(*db, i, u, err)
			case checkDatabase(ctx, u) == nil:
				fmt.Fprintf(c.stdout, "the schema is already in %s: left as it is\n", config.RedactURL(u))
			default:
				return dataError(*db, i, u, fmt.Errorf("it already has a table %q, but not the platform's schema: load the schema into a new database", table))
			}
		}
		if *db == "" {
			fmt.Fprintln(c.stdout, "\nNext, demo data into both: gateway data load --size small")
		}
		return nil
	}
}

func dataLoadFlags(fs *flag.FlagSet) action {
	db := databaseFlag(fs)
	size := fs.String("size", "small", "`SIZE`, small (demo data, live and sandbox) or large (platform scale, one PostgreSQL database)")
	seed := fs.Int64("seed", 1, "generator seed `N`: the same seed makes the same data")
	shape := fs.String("shape", "mixed", "with --size large, how documents spread over states and dates: `SHAPE` mixed (2023-2025, every due date past), even (the three years up to today, half of the due dates past at every age) or aging (due in 30 days, paid as they age: the newest not yet due); even and aging also give customers names of a long tail, so that searches meet rare fragments")
	return func(ctx context.Context, c *invocation) error {
		start := time.Now()
		switch *size {
		case "small":
			if *shape != "mixed" {
				return usagef("--shape applies to --size large")
			}
			if *db != "" {
				return usagef("--size small loads the live and the sandbox database together: configure both instead of --database")
			}
			urls, err := dataTargets(c, "")
			if err != nil {
				return err
			}
			for i, u := range urls { // each answers and has the schema, or is named
				if err := checkDatabase(ctx, u); err != nil {
					return dataError("", i, u, err)
				}
			}
			sum, err := gendata.LoadSmall(ctx, urls[0], urls[1], *seed)
			if err != nil {
				return err
			}
			printSmall(c.stdout, sum, time.Since(start))
			return nil
		case "large":
			if *db == "" {
				return usagef("--size large needs --database with a postgres:// URL")
			}
			spec, err := gendata.DefaultLargeSpec, error(nil)
			if spec.Shape, err = gendata.ParseShape(*shape); err != nil {
				return usagef("--shape must be mixed, even or aging")
			}
			if err := gendata.LoadLarge(ctx, *db, *seed, spec, c.stdout); err != nil {
				return err
			}
			fmt.Fprintf(c.stdout, "large data loaded in %s\n", time.Since(start).Round(time.Second))
			return nil
		}
		return usagef("--size must be small or large")
	}
}

// printSmall says what the small set made, and the next step: a key for
// its first company.
func printSmall(w io.Writer, sum gendata.Summary, took time.Duration) {
	fmt.Fprintf(w, "small data loaded in %s: live %d clients, %d invoices; sandbox %d clients, %d invoices\n",
		took.Round(time.Second), sum.Live.Customers, sum.Live.Documents, sum.Sandbox.Customers, sum.Sandbox.Documents)
	fmt.Fprintln(w, "\nCompanies (the same ids in both databases):")
	for _, co := range sum.Companies {
		fmt.Fprintf(w, "  %s  %-9s  %s\n", co.ID, co.Status, co.LegalName)
	}
	fmt.Fprintf(w, "\nNext, a key for the first company (LIVE reads the live database, TEST the sandbox):\n")
	fmt.Fprintf(w, "  gateway keys create --company %s --mode LIVE --scopes invoices:read,clients:read,clients:write\n", sum.Companies[0].ID)
}

// duplicateTable is the table an ApplySchema error says exists already, ""
// for any other error. The schema is one transaction: it was not applied,
// so `data schema` run again on a loaded database changes nothing, and says
// so (checkDatabase tells the platform's schema from another's).
func duplicateTable(err error) string {
	var pg *pgconn.PgError
	if errors.As(err, &pg) && pg.Code == "42P07" {
		if _, name, ok := strings.Cut(pg.Message, `"`); ok {
			name, _, _ = strings.Cut(name, `"`)
			return name
		}
		return "?"
	}
	// SQLite: "table companies already exists".
	if err != nil && strings.Contains(err.Error(), " already exists") {
		f := strings.Fields(err.Error()[:strings.Index(err.Error(), " already exists")])
		return f[len(f)-1]
	}
	return ""
}

// checkDatabase asks the database of url for a company, which needs the
// schema: what data load needs of it.
func checkDatabase(ctx context.Context, url string) error {
	st, err := backend.Open(ctx, backend.Config{URL: url})
	if err != nil {
		return err
	}
	defer st.Close()
	_, err = st.Company(ctx, gendata.DemoCompanyA)
	if errors.Is(err, backend.ErrNotFound) {
		return nil
	}
	return err
}

// dataError names the database a data command failed on, and its cause.
func dataError(db string, i int, url string, err error) error {
	field := "LiveDatabaseURL"
	if i == 1 {
		field = "TestDatabaseURL"
	}
	what := "the " + databaseName(field) + " database"
	setting := config.SettingName(field)
	if db != "" {
		what, setting = "the database", "--database"
	}
	return &depError{what: what, setting: setting, target: config.RedactURL(url), err: err}
}
