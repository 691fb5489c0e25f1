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

	"github.com/invoicing-ao/gateway/authz"
	"github.com/invoicing-ao/gateway/gateway"
	"github.com/invoicing-ao/gateway/invoicing"
)

func keysCreateFlags(fs *flag.FlagSet) action {
	company := companyFlag(fs)
	modeS := fs.String("mode", "", "`MODE`, LIVE (live data) or TEST (the sandbox)")
	scopesS := fs.String("scopes", "", "comma-separated `LIST` of invoices:read, clients:read, clients:write")
	name := fs.String("name", "", "a name to recognise the key by (`TEXT`)")
	asJSON := jsonFlag(fs)
	quiet := fs.Bool("quiet", false, "print the secret only, for scripts: KEY=$(gateway keys create ... --quiet)")
	return func(ctx context.Context, c *invocation) error {
		mode, err := invoicing.ParseMode(*modeS)
		if err != nil {
			return usagef("--mode %q: must be LIVE or TEST", *modeS)
		}
		scopes, err := authz.ParseScopes(*scopesS)
		if err != nil {
			return usagef("--scopes %q: %v (known: invoices:read, clients:read, clients:write)", *scopesS, err)
		}
		if *asJSON && *quiet {
			return usagef("--json and --quiet exclude each other")
		}
		d, err := c.open(ctx)
		if err != nil {
			return err
		}
		defer d.Close()
		v, err := d.server.CreateKey(ctx, *company, mode, scopes, *name)
		switch {
		case err != nil:
			return err
		case *asJSON:
			return json.NewEncoder(c.stdout).Encode(v)
		case *quiet:
			_, err := fmt.Fprintln(c.stdout, v.Key)
			return err
		}
		fmt.Fprintf(c.stdout, "Created key %s (%s, %s) for company %s.\n", v.ID, v.Mode, strings.Join(v.Scopes, ","), v.CompanyID)
		fmt.Fprintf(c.stdout, "Secret (shown this once; store it now):\n%s\n", v.Key)
		return nil
	}
}

func keysList(company *string, asJSON *bool) action {
	return func(ctx context.Context, c *invocation) error {
		d, err := c.open(ctx)
		if err != nil {
			return err
		}
		defer d.Close()
		keys, err := d.server.ListKeys(ctx, *company)
		if err != nil {
			return err
		}
		if *asJSON {
			return json.NewEncoder(c.stdout).Encode(keys)
		}
		printKeys(c.stdout, keys)
		return nil
	}
}

func keysRevoke(asJSON *bool) action {
	return func(ctx context.Context, c *invocation) error {
		d, err := c.open(ctx)
		if err != nil {
			return err
		}
		defer d.Close()
		v, err := d.server.RevokeKey(ctx, c.args[0])
		if err != nil {
			return err
		}
		if *asJSON {
			return json.NewEncoder(c.stdout).Encode(v)
		}
		fmt.Fprintf(c.stdout, "Revoked key %s (%s); every gateway refuses it within a second.\n", v.ID, v.Hint)
		return nil
	}
}

func printKeys(w io.Writer, keys []gateway.KeyView) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tMODE\tSCOPES\tNAME\tKEY\tSTATE\tCREATED\tLAST USED")
	for _, k := range keys {
		last := "never"
		if k.LastUsedAt != nil {
			last = k.LastUsedAt.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", k.ID, k.Mode, strings.Join(k.Scopes, ","), k.Name, k.Hint, k.State,
			k.CreatedAt.UTC().Format(time.RFC3339), last)
	}
	_ = tw.Flush()
}
