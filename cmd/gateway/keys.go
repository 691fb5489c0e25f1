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
	"github.com/invoicing-ao/gateway/authz"
	"github.com/invoicing-ao/gateway/invoicing"
)

func keysCreateFlags(fs *flag.FlagSet) action {
	company := companyFlag(fs)
	modeS := fs.String("mode", "", "`MODE`, LIVE (live data) or TEST (the sandbox)")
	scopesS := fs.String("scopes", "", "comma-separated `LIST` of invoices:read, clients:read, clients:write, events:read")
	name := fs.String("name", "", "a name to recognise the key by (`TEXT`)")
	expiresIn := fs.String("expires-in", "", "the key expires this `DURATION` from now (720h, 30d)")
	expiresAt := fs.String("expires-at", "", "the key expires at this `RFC3339` time")
	var cidrs listFlag
	fs.Var(&cidrs, "allow-cidr", "accept the key only from this `CIDR` (or address); repeatable")
	asJSON := jsonFlag(fs)
	quiet := fs.Bool("quiet", false, "print the secret only, for scripts: KEY=$(gateway keys create ... --quiet)")
	return func(ctx context.Context, c *invocation) error {
		mode, err := invoicing.ParseMode(*modeS)
		if err != nil {
			return usagef("--mode %q: must be LIVE or TEST", *modeS)
		}
		scopes, err := authz.ParseScopes(*scopesS)
		if err != nil {
			return usagef("--scopes %q: %s", *scopesS, refusal(err))
		}
		if *asJSON && *quiet {
			return usagef("--json and --quiet exclude each other")
		}
		if _, err := authz.ParseCIDRs(cidrs); err != nil {
			return usagef("--allow-cidr: %s", refusal(err))
		}
		spec := admin.KeySpec{CompanyID: *company, Mode: mode, Scopes: scopes, Name: *name, AllowedCIDRs: cidrs}
		if spec.ExpiresAt, err = expiry(*expiresIn, *expiresAt, time.Now()); err != nil {
			return err
		}
		return invoke(ctx, c, *asJSON, func(ctx context.Context, d *deps) (admin.KeyView, error) {
			return d.admin.Keys.CreateKey(ctx, commandActor(), spec)
		}, func(w io.Writer, v admin.KeyView) error {
			if *quiet {
				_, err := fmt.Fprintln(w, v.Key)
				return err
			}
			fmt.Fprintf(w, "Created key %s (%s, %s) for company %s%s.\n", v.ID, v.Mode, strings.Join(v.Scopes, ","), v.CompanyID, limitsOf(v))
			fmt.Fprintf(w, "Secret (shown this once; store it now):\n%s\n", v.Key)
			return nil
		})
	}
}

func keysList(company *string, asJSON *bool) action {
	return func(ctx context.Context, c *invocation) error {
		return invoke(ctx, c, *asJSON, func(ctx context.Context, d *deps) ([]admin.KeyView, error) {
			return d.admin.Keys.ListKeys(ctx, *company)
		}, func(w io.Writer, keys []admin.KeyView) error {
			if len(keys) == 0 {
				_, err := fmt.Fprintf(w, "No keys for company %s.\n", *company)
				return err
			}
			printKeys(w, keys)
			return nil
		})
	}
}

func keysRevokeFlags(fs *flag.FlagSet) action {
	keep := fs.Bool("keep-previous", false, "keep working the keys this one replaced by a roll (their overlap runs on)")
	asJSON := jsonFlag(fs)
	return func(ctx context.Context, c *invocation) error {
		return invoke(ctx, c, *asJSON, func(ctx context.Context, d *deps) (admin.RevokedView, error) {
			return d.admin.Keys.RevokeKey(ctx, commandActor(), c.args[0], *keep)
		}, func(w io.Writer, v admin.RevokedView) error {
			fmt.Fprintf(w, "Revoked key %s (%s); every gateway refuses it within a second.\n", v.ID, v.Hint)
			for _, p := range v.AlsoRevoked {
				fmt.Fprintf(w, "Revoked with it key %s (%s), which it replaced by a roll and which still worked.\n", p.ID, p.Hint)
			}
			for _, p := range v.StillActive {
				fmt.Fprintf(w, "Key %s (%s), which it replaced by a roll, still works until %s: revoke it with gateway keys revoke %s.\n",
					p.ID, p.Hint, stamp(p.ExpiresAt, "its expiry"), p.ID)
			}
			return nil
		})
	}
}

func printKeys(w io.Writer, keys []admin.KeyView) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tMODE\tSCOPES\tNAME\tKEY\tSTATE\tCREATED\tLAST USED\tEXPIRES\tROLLED\tNETWORKS")
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

// stamp is t in RFC 3339 (UTC), or none when there is none.
func stamp(t *time.Time, none string) string {
	if t == nil {
		return none
	}
	return t.UTC().Format(time.RFC3339)
}

// none is what a table shows for an empty value: the console's mark, so
// that the two read alike.
const none = "—"

func orDash(s string) string {
	if s == "" {
		return none
	}
	return s
}

// listFlag is a repeatable flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(s string) error { *l = append(*l, s); return nil }

// expiry reads --expires-in or --expires-at (not both); nil means never.
func expiry(in, at string, now time.Time) (*time.Time, error) {
	switch {
	case in != "" && at != "":
		return nil, usagef("give --expires-in or --expires-at, not both")
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
func limitsOf(v admin.KeyView) string {
	s := ""
	if v.ExpiresAt != nil {
		s += ", expiring " + v.ExpiresAt.UTC().Format(time.RFC3339)
	}
	if len(v.AllowedCIDRs) > 0 {
		s += ", from " + strings.Join(v.AllowedCIDRs, " ")
	}
	return s
}

func keysRollFlags(fs *flag.FlagSet) action {
	overlap := fs.Duration("overlap", authz.DefaultOverlap, "how long the old key keeps working (`DURATION`; 0: it ends now)")
	asJSON := jsonFlag(fs)
	return func(ctx context.Context, c *invocation) error {
		return invoke(ctx, c, *asJSON, func(ctx context.Context, d *deps) (admin.RolledView, error) {
			return d.admin.Keys.RollKey(ctx, commandActor(), c.args[0], *overlap)
		}, func(w io.Writer, v admin.RolledView) error {
			fmt.Fprintf(w, "Rolled key %s to %s (%s, %s) for company %s%s.\n", c.args[0], v.ID, v.Mode, strings.Join(v.Scopes, ","), v.CompanyID, limitsOf(v.KeyView))
			if end := v.Previous.ExpiresAt; end != nil {
				fmt.Fprintf(w, "The old key works until %s.\n", end.UTC().Format(time.RFC3339))
			}
			fmt.Fprintf(w, "Secret (shown this once; store it now):\n%s\n", v.Key)
			return nil
		})
	}
}
