package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/invoicing-ao/gateway/authz"
	"github.com/invoicing-ao/gateway/backend/gendata"
	"github.com/invoicing-ao/gateway/gateway"
	"github.com/invoicing-ao/gateway/invoicing"
)

// demoKeySets are the scope sets the demo makes a key for, in each mode.
var demoKeySets = []struct{ name, scopes string }{
	{"full access", "invoices:read,clients:read,clients:write"},
	{"read only", "invoices:read,clients:read"},
	{"invoices only", "invoices:read"},
	{"clients only", "clients:read,clients:write"},
}

// cmdDemo runs the gateway with nothing installed: an in-process Redis, two
// SQLite databases (live and sandbox) filled with generated demo data in a
// temporary directory, and ready keys printed with curl lines.
func cmdDemo(ctx context.Context, args []string, stdout, stderr io.Writer, env func(string) string) error {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dataDir := fs.String("data", "", "directory for the demo databases (default: a new temporary directory)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, pos[0])
	}
	dir := *dataDir
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "gateway-demo-"); err != nil {
			return err
		}
		defer os.RemoveAll(dir)
	} else if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	cfg := defaultConfig()
	cfg.LiveDatabaseURL = "sqlite:" + filepath.Join(dir, "live.db")
	cfg.TestDatabaseURL = "sqlite:" + filepath.Join(dir, "sandbox.db")
	cfg.LogLevel = "warn"
	if err := applyEnv(&cfg, env); err != nil {
		return err
	}
	if cfg.AdminToken == "" {
		cfg.AdminToken = randomToken()
	}
	if err := cfg.validate(); err != nil {
		return err
	}
	fresh := true
	if _, err := os.Stat(filepath.Join(dir, "live.db")); err == nil {
		fresh = false
	}
	if fresh {
		if _, err := gendata.SetUpSmall(ctx, cfg.LiveDatabaseURL, cfg.TestDatabaseURL, 1); err != nil {
			return fmt.Errorf("demo data: %w", err)
		}
	}
	mr := miniredis.NewMiniRedis()
	if err := mr.Start(); err != nil {
		return fmt.Errorf("in-process Redis: %w", err)
	}
	defer mr.Close()
	logger := newLogger(stderr, cfg.LogLevel)
	d, err := connectWith(ctx, cfg, logger, redis.NewClient(&redis.Options{Addr: mr.Addr(), ContextTimeoutEnabled: true}))
	if err != nil {
		return err
	}
	defer d.Close()

	type demoKey struct{ company, mode, set, secret string }
	var keys []demoKey
	for _, mode := range []invoicing.Mode{invoicing.Live, invoicing.Test} {
		for _, ks := range demoKeySets {
			scopes, _ := authz.ParseScopes(ks.scopes)
			v, err := d.server.CreateKey(ctx, commandActor(), gateway.KeySpec{CompanyID: gendata.DemoCompanyA, Mode: mode, Scopes: scopes, Name: "demo " + ks.name})
			if err != nil {
				return fmt.Errorf("demo key: %w", err)
			}
			keys = append(keys, demoKey{gendata.DemoCompanyA, string(mode), ks.name, v.Key})
		}
	}
	all, _ := authz.ParseScopes(demoKeySets[0].scopes)
	for _, co := range []string{gendata.DemoCompanyB, gendata.DemoCompanySuspended} {
		v, err := d.server.CreateKey(ctx, commandActor(), gateway.KeySpec{CompanyID: co, Mode: invoicing.Live, Scopes: all, Name: "demo full access"})
		if err != nil {
			return fmt.Errorf("demo key: %w", err)
		}
		keys = append(keys, demoKey{co, "LIVE", "full access", v.Key})
	}

	return listenAndServe(ctx, cfg, d, logger, func(pub, adm net.Addr) {
		base := "http://" + hostPort(pub)
		w := stdout
		fmt.Fprintf(w, "Demo gateway ready on %s (admin API on %s, token %s)\n", base, hostPort(adm), cfg.AdminToken)
		fmt.Fprintf(w, "Data: %s (LIVE) and %s (TEST)\n\n", cfg.LiveDatabaseURL, cfg.TestDatabaseURL)
		fmt.Fprintf(w, "Companies: A %s (active), B %s (active), S %s (suspended)\n\n", gendata.DemoCompanyA, gendata.DemoCompanyB, gendata.DemoCompanySuspended)
		fmt.Fprintln(w, "Keys:")
		for _, k := range keys {
			fmt.Fprintf(w, "  %-4s %-14s company %s  %s\n", k.mode, k.set, companyLetter(k.company), k.secret)
		}
		a, at := keys[0].secret, keys[len(demoKeySets)].secret
		hdr := func(key, co string) string {
			return fmt.Sprintf(`-H "Authorization: Bearer %s" -H "X-Company-Id: %s"`, key, co)
		}
		fmt.Fprintln(w, "\nTry:")
		fmt.Fprintf(w, "  curl -s %s '%s/api/v1/v1/invoices?pageSize=2'\n", hdr(a, gendata.DemoCompanyA), base)
		fmt.Fprintf(w, "  curl -s %s '%s/api/v1/v1/invoices?status=OVERDUE&type=FT'\n", hdr(a, gendata.DemoCompanyA), base)
		fmt.Fprintf(w, "  curl -s %s '%s/api/v1/v1/clients?search=lda'\n", hdr(a, gendata.DemoCompanyA), base)
		fmt.Fprintf(w, "  curl -s %s -H 'Content-Type: application/json' -d '{\"name\":\"Kianda Lda\",\"nif\":\"5417000001\",\"type\":\"COMPANY\",\"phone\":\"+244 923 456 789\"}' %s/api/v1/v1/clients\n", hdr(a, gendata.DemoCompanyA), base)
		fmt.Fprintf(w, "  curl -s %s %s/api/v1/v1/invoices   # TEST key: sandbox data\n", hdr(at, gendata.DemoCompanyA), base)
		fmt.Fprintf(w, "  curl -s -H \"Authorization: Bearer %s\" '%s/admin/v1/keys?companyId=%s'   # admin API\n", cfg.AdminToken, "http://"+hostPort(adm), gendata.DemoCompanyA)
		fmt.Fprintln(w, "\nPress Ctrl+C to stop.")
	})
}

func companyLetter(id string) string {
	switch id {
	case gendata.DemoCompanyA:
		return "A"
	case gendata.DemoCompanyB:
		return "B"
	}
	return "S"
}

// hostPort makes a listener address usable in a URL (":8080" → localhost:8080).
func hostPort(a net.Addr) string {
	host, port, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	if host == "" || host == "::" || host == "0.0.0.0" {
		host = "localhost"
	}
	return net.JoinHostPort(host, port)
}

func randomToken() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
