package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
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

// keysFlags are the flags of the keys commands; each uses its own.
type keysFlags struct {
	load                  func() (Config, error)
	company, mode, scopes string
	name                  string
	expiresIn, expiresAt  string
	cidrs                 listFlag
	overlap               time.Duration
	asJSON                bool
	stdout, stderr        io.Writer
}

// listFlag is a repeatable flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(s string) error { *l = append(*l, s); return nil }

func cmdKeys(ctx context.Context, args []string, stdout, stderr io.Writer, env func(string) string) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: keys needs create, list, roll or revoke", errUsage)
	}
	fs := flag.NewFlagSet("keys "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	f := keysFlags{load: configFlag(fs, env), stdout: stdout, stderr: stderr}
	fs.StringVar(&f.company, "company", "", "company id")
	fs.StringVar(&f.mode, "mode", "", "LIVE or TEST")
	fs.StringVar(&f.scopes, "scopes", "", "comma-separated: invoices:read,clients:read,clients:write")
	fs.StringVar(&f.name, "name", "", "a name to recognise the key by")
	fs.StringVar(&f.expiresIn, "expires-in", "", "the key expires this long from now (720h, 30d)")
	fs.StringVar(&f.expiresAt, "expires-at", "", "the key expires at this RFC 3339 time")
	fs.Var(&f.cidrs, "allow-cidr", "accept the key only from this network (CIDR or address; repeatable)")
	fs.DurationVar(&f.overlap, "overlap", authz.DefaultOverlap, "keys roll: how long the old key keeps working (0: it ends now)")
	fs.BoolVar(&f.asJSON, "json", false, "print JSON")
	pos, err := parseFlags(fs, args[1:])
	if err != nil {
		return err
	}
	byID := args[0] == "revoke" || args[0] == "roll"
	if !byID && len(pos) > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, pos[0])
	}
	if byID && len(pos) != 1 {
		return fmt.Errorf("%w: keys %s needs exactly one KEY_ID", errUsage, args[0])
	}
	switch args[0] {
	case "create":
		return keysCreate(ctx, f)
	case "list":
		return keysList(ctx, f)
	case "roll":
		return keysRoll(ctx, f, pos[0])
	case "revoke":
		return keysRevoke(ctx, f, pos[0])
	}
	return fmt.Errorf("%w: unknown keys command %q", errUsage, args[0])
}

func keysCreate(ctx context.Context, f keysFlags) error {
	if f.company == "" || f.mode == "" || f.scopes == "" {
		return fmt.Errorf("%w: keys create needs --company, --mode and --scopes", errUsage)
	}
	spec := gateway.KeySpec{CompanyID: f.company, Name: f.name, AllowedCIDRs: f.cidrs}
	var err error
	if spec.Mode, err = invoicing.ParseMode(f.mode); err != nil {
		return fmt.Errorf("--mode %q: must be LIVE or TEST", f.mode)
	}
	if spec.Scopes, err = authz.ParseScopes(f.scopes); err != nil {
		return fmt.Errorf("--scopes %q: %v (known: invoices:read, clients:read, clients:write)", f.scopes, err)
	}
	if spec.ExpiresAt, err = expiry(f.expiresIn, f.expiresAt, time.Now()); err != nil {
		return err
	}
	d, err := management(ctx, f.load, f.stderr)
	if err != nil {
		return err
	}
	defer d.Close()
	v, err := d.server.CreateKey(ctx, commandActor(), spec)
	if err != nil {
		return err
	}
	if f.asJSON {
		return json.NewEncoder(f.stdout).Encode(v)
	}
	fmt.Fprintf(f.stdout, "Created key %s (%s, %s) for company %s%s.\n", v.ID, v.Mode, strings.Join(v.Scopes, ","), v.CompanyID, limitsOf(v))
	fmt.Fprintf(f.stdout, "Secret (shown this once; store it now):\n%s\n", v.Key)
	return nil
}

// expiry reads --expires-in or --expires-at (not both); nil means never.
func expiry(in, at string, now time.Time) (*time.Time, error) {
	switch {
	case in != "" && at != "":
		return nil, fmt.Errorf("%w: give --expires-in or --expires-at, not both", errUsage)
	case in != "":
		d, err := parseDuration(in)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("--expires-in %q: must be a positive duration such as 720h or 30d", in)
		}
		t := now.Add(d)
		return &t, nil
	case at != "":
		t, err := time.Parse(time.RFC3339Nano, at)
		if err != nil {
			return nil, fmt.Errorf("--expires-at %q: must be an RFC 3339 time such as 2027-01-31T00:00:00Z", at)
		}
		return &t, nil
	}
	return nil, nil
}

// parseDuration is time.ParseDuration, also taking whole days ("30d").
func parseDuration(s string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil {
			return 0, err
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	return time.ParseDuration(s)
}

// limitsOf describes a key's expiry and networks, when it has them.
func limitsOf(v gateway.KeyView) string {
	s := ""
	if v.ExpiresAt != nil {
		s += ", expiring " + v.ExpiresAt.UTC().Format(time.RFC3339)
	}
	if len(v.AllowedCIDRs) > 0 {
		s += ", from " + strings.Join(v.AllowedCIDRs, " ")
	}
	return s
}

func keysList(ctx context.Context, f keysFlags) error {
	if f.company == "" {
		return fmt.Errorf("%w: keys list needs --company", errUsage)
	}
	d, err := management(ctx, f.load, f.stderr)
	if err != nil {
		return err
	}
	defer d.Close()
	keys, err := d.server.ListKeys(ctx, f.company)
	if err != nil {
		return err
	}
	if f.asJSON {
		return json.NewEncoder(f.stdout).Encode(keys)
	}
	printKeys(f.stdout, keys)
	return nil
}

func keysRoll(ctx context.Context, f keysFlags, keyID string) error {
	d, err := management(ctx, f.load, f.stderr)
	if err != nil {
		return err
	}
	defer d.Close()
	v, err := d.server.RollKey(ctx, commandActor(), keyID, f.overlap)
	if err != nil {
		return err
	}
	if f.asJSON {
		return json.NewEncoder(f.stdout).Encode(v)
	}
	fmt.Fprintf(f.stdout, "Rolled key %s to %s (%s, %s) for company %s%s.\n", keyID, v.ID, v.Mode, strings.Join(v.Scopes, ","), v.CompanyID, limitsOf(v.KeyView))
	if end := v.Previous.ExpiresAt; end != nil {
		fmt.Fprintf(f.stdout, "The old key works until %s.\n", end.UTC().Format(time.RFC3339))
	}
	fmt.Fprintf(f.stdout, "Secret (shown this once; store it now):\n%s\n", v.Key)
	return nil
}

func keysRevoke(ctx context.Context, f keysFlags, keyID string) error {
	d, err := management(ctx, f.load, f.stderr)
	if err != nil {
		return err
	}
	defer d.Close()
	v, err := d.server.RevokeKey(ctx, commandActor(), keyID)
	if err != nil {
		return err
	}
	if f.asJSON {
		return json.NewEncoder(f.stdout).Encode(v)
	}
	fmt.Fprintf(f.stdout, "Revoked key %s (%s); every gateway refuses it within a second.\n", v.ID, v.Hint)
	return nil
}

func printKeys(w io.Writer, keys []gateway.KeyView) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tMODE\tSCOPES\tNAME\tKEY\tSTATE\tCREATED\tLAST USED\tEXPIRES\tROLLED\tNETWORKS")
	stamp := func(t *time.Time, none string) string {
		if t == nil {
			return none
		}
		return t.UTC().Format(time.RFC3339)
	}
	for _, k := range keys {
		var rolled []string
		if k.Replaces != nil {
			rolled = append(rolled, "from "+*k.Replaces)
		}
		if k.ReplacedBy != nil {
			rolled = append(rolled, "to "+*k.ReplacedBy)
		}
		nets := strings.Join(k.AllowedCIDRs, ",")
		if nets == "" {
			nets = "any"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", k.ID, k.Mode, strings.Join(k.Scopes, ","), k.Name, k.Hint, k.State,
			k.CreatedAt.UTC().Format(time.RFC3339), stamp(k.LastUsedAt, "never"), stamp(k.ExpiresAt, "never"),
			orDash(strings.Join(rolled, ", ")), nets)
	}
	_ = tw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
