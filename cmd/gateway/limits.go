package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/invoicing-ao/gateway/admin"
	"github.com/invoicing-ao/gateway/invoicing"
	"github.com/invoicing-ao/gateway/tenants"
	"github.com/invoicing-ao/gateway/web"
)

func limitsGet(company *string, asJSON *bool) action {
	return limitsAction(asJSON, func(ctx context.Context, s *admin.Service) (admin.LimitsView, error) {
		return s.Limits.CompanyLimits(ctx, *company)
	})
}

func limitsSetFlags(fs *flag.FlagSet) action {
	company := companyFlag(fs)
	mode := fs.String("mode", "", "`MODE`, LIVE or TEST (default: both)")
	rate := fs.Float64("rate", 0, "sustained requests per second (`N` > 0)")
	fs.Var((*floatFlag)(rate), "rps", "") // the old name of --rate
	burst := fs.Int("burst", 0, "requests allowed at once (`N` >= 1)")
	asJSON := jsonFlag(fs)
	return func(ctx context.Context, c *invocation) error {
		if err := checkLimitFlags(*mode, true, *rate, *burst); err != nil {
			return err
		}
		return invoke(ctx, c, *asJSON, func(ctx context.Context, d *deps) (admin.LimitsView, error) {
			if err := knownToThePlatform(ctx, c, d, *company); err != nil {
				return admin.LimitsView{}, err
			}
			return d.admin.Limits.SetCompanyLimit(ctx, commandActor(), *company, *mode, *rate, *burst)
		}, printLimits)
	}
}

// knownToThePlatform refuses a company the live database does not know,
// as the admin API does. `limits set` needs only Redis, so that a company
// can be throttled while the database is down: a database that does not
// answer (or none configured) leaves the id checked for its form only, and
// says so.
func knownToThePlatform(ctx context.Context, c *invocation, d *deps, company string) error {
	id, err := invoicing.ParseCompanyID(company)
	if err != nil || d.cfg.LiveDatabaseURL == "" {
		return nil // the form is the admin's to refuse
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	st, err := openStore(ctx, d.cfg, "LiveDatabaseURL", d.logger, wireOptions{})
	if err == nil {
		defer st.Close()
		_, err = st.Company(ctx, id)
		if invoicing.KindOf(err) == invoicing.NotFound {
			return &web.Error{Code: "unknown_company", Detail: "No company " + id + " exists on the platform.", Err: err}
		}
	}
	if err != nil {
		fmt.Fprintf(c.stderr, "gateway: warning: the company is not checked against the platform (%s)\n", firstLine(message(err)))
	}
	return nil
}

// firstLine is s up to its first line break.
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// floatFlag is a float64 flag under a second name.
type floatFlag float64

func (f *floatFlag) String() string { return strconv.FormatFloat(float64(*f), 'g', -1, 64) }
func (f *floatFlag) Set(s string) error {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return errors.New("parse error")
	}
	*f = floatFlag(v)
	return nil
}

// checkLimitFlags refuses a mode, rate or burst out of range, each in its
// flag's name, before anything is read or written: every one at fault.
func checkLimitFlags(mode string, modeOptional bool, rate float64, burst int) error {
	var bad []string
	if m := strings.ToUpper(mode); !(modeOptional && m == "") && m != "LIVE" && m != "TEST" {
		bad = append(bad, fmt.Sprintf("--mode %q: must be LIVE or TEST", mode))
	}
	if err := (tenants.Limit{Rate: rate, Burst: 1}).Validate(); err != nil {
		bad = append(bad, fmt.Sprintf("--rate %s: %s", strconv.FormatFloat(rate, 'f', -1, 64), refusal(err)))
	}
	if err := (tenants.Limit{Rate: 1, Burst: burst}).Validate(); err != nil {
		bad = append(bad, fmt.Sprintf("--burst %d: %s", burst, refusal(err)))
	}
	if len(bad) > 0 {
		return usagef("%s", strings.Join(bad, "; "))
	}
	return nil
}

func limitsReset(company *string, asJSON *bool) action {
	return limitsAction(asJSON, func(ctx context.Context, s *admin.Service) (admin.LimitsView, error) {
		return s.Limits.ResetCompanyLimits(ctx, commandActor(), *company)
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
