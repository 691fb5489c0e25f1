package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/invoicing-ao/gateway/authz"
	"github.com/invoicing-ao/gateway/gateway"
	"github.com/invoicing-ao/gateway/invoicing"
)

// management opens what a management command needs, quietly.
func management(ctx context.Context, load func() (Config, error), stderr io.Writer) (*deps, error) {
	cfg, err := load()
	if err != nil {
		return nil, err
	}
	return connect(ctx, cfg, newLogger(stderr, "error"))
}

func cmdKeys(ctx context.Context, args []string, stdout, stderr io.Writer, env func(string) string) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: keys needs create, list or revoke", errUsage)
	}
	fs := flag.NewFlagSet("keys "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	load := configFlag(fs, env)
	company := fs.String("company", "", "company id")
	modeS := fs.String("mode", "", "LIVE or TEST")
	scopesS := fs.String("scopes", "", "comma-separated: invoices:read,clients:read,clients:write")
	name := fs.String("name", "", "a name to recognise the key by")
	asJSON := fs.Bool("json", false, "print JSON")
	pos, err := parseFlags(fs, args[1:])
	if err != nil {
		return err
	}
	if args[0] != "revoke" && len(pos) > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, pos[0])
	}
	switch args[0] {
	case "create":
		if *company == "" || *modeS == "" || *scopesS == "" {
			return fmt.Errorf("%w: keys create needs --company, --mode and --scopes", errUsage)
		}
		mode, err := invoicing.ParseMode(*modeS)
		if err != nil {
			return fmt.Errorf("--mode %q: must be LIVE or TEST", *modeS)
		}
		scopes, err := authz.ParseScopes(*scopesS)
		if err != nil {
			return fmt.Errorf("--scopes %q: %v (known: invoices:read, clients:read, clients:write)", *scopesS, err)
		}
		d, err := management(ctx, load, stderr)
		if err != nil {
			return err
		}
		defer d.Close()
		v, err := d.server.CreateKey(ctx, commandActor(), gateway.KeySpec{CompanyID: *company, Mode: mode, Scopes: scopes, Name: *name})
		if err != nil {
			return err
		}
		if *asJSON {
			return json.NewEncoder(stdout).Encode(v)
		}
		fmt.Fprintf(stdout, "Created key %s (%s, %s) for company %s.\n", v.ID, v.Mode, joinScopes(v.Scopes), v.CompanyID)
		fmt.Fprintf(stdout, "Secret (shown this once; store it now):\n%s\n", v.Key)
		return nil
	case "list":
		if *company == "" {
			return fmt.Errorf("%w: keys list needs --company", errUsage)
		}
		d, err := management(ctx, load, stderr)
		if err != nil {
			return err
		}
		defer d.Close()
		keys, err := d.server.ListKeys(ctx, *company)
		if err != nil {
			return err
		}
		if *asJSON {
			return json.NewEncoder(stdout).Encode(keys)
		}
		printKeys(stdout, keys)
		return nil
	case "revoke":
		if len(pos) != 1 {
			return fmt.Errorf("%w: keys revoke needs exactly one KEY_ID", errUsage)
		}
		d, err := management(ctx, load, stderr)
		if err != nil {
			return err
		}
		defer d.Close()
		v, err := d.server.RevokeKey(ctx, commandActor(), pos[0])
		if err != nil {
			return err
		}
		if *asJSON {
			return json.NewEncoder(stdout).Encode(v)
		}
		fmt.Fprintf(stdout, "Revoked key %s (%s); every gateway refuses it within a second.\n", v.ID, v.Hint)
		return nil
	}
	return fmt.Errorf("%w: unknown keys command %q", errUsage, args[0])
}

func joinScopes(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += ","
		}
		out += x
	}
	return out
}

func printKeys(w io.Writer, keys []gateway.KeyView) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tMODE\tSCOPES\tNAME\tKEY\tSTATE\tCREATED\tLAST USED")
	for _, k := range keys {
		last := "never"
		if k.LastUsedAt != nil {
			last = k.LastUsedAt.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", k.ID, k.Mode, joinScopes(k.Scopes), k.Name, k.Hint, k.State,
			k.CreatedAt.UTC().Format(time.RFC3339), last)
	}
	_ = tw.Flush()
}
