package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/invoicing-ao/gateway/admin"
	"github.com/invoicing-ao/gateway/admin/console"
	"github.com/invoicing-ao/gateway/authz"
	"github.com/invoicing-ao/gateway/backend/gendata"
	"github.com/invoicing-ao/gateway/cmd/gateway/internal/config"
	"github.com/invoicing-ao/gateway/gateway/apidocs"
	"github.com/invoicing-ao/gateway/internal/seal"
	"github.com/invoicing-ao/gateway/invoicing"
)

// demoKeySets are the scope sets the demo makes a key for, in each mode.
var demoKeySets = []struct{ name, scopes string }{
	{"full access", "invoices:read,clients:read,clients:write,events:read"},
	{"read only", "invoices:read,clients:read"},
	{"invoices only", "invoices:read"},
	{"clients only", "clients:read,clients:write"},
}

// demoRedisTimeout is the deadline of a rate-limit decision and of a key's
// verification on the demo's in-process Redis. The defaults (50 ms and
// 250 ms) are for a Redis across a network, where waiting longer only adds
// to every request's latency and the local fallback (or a 503) is the
// better answer. In-process, nothing is across a network: a call late by
// that much means the process is busy (a burst on a small machine:
// miniredis builds a new Lua interpreter for every script call, ~830
// allocations and 0.3 ms of CPU), and giving up would not make it less
// busy, only split the limit from the one Redis the demo has or refuse a
// valid key (a first burst of 100 requests on a busy 2-core machine was
// answered 503 authentication_unavailable, every one).
const demoRedisTimeout = 2 * time.Second

// demoFlags is `gateway demo`: the gateway with nothing installed, an
// in-process Redis and two SQLite databases (live and sandbox) of generated
// demo data in a temporary directory, beside the gateway's own database
// (SQLite too: the audit log), and ready keys printed with curl lines.
func demoFlags(fs *flag.FlagSet) action {
	dataDir := fs.String("data", "", "`DIR` to keep the demo databases in, and reuse (default: a new temporary directory, removed at exit)")
	return func(ctx context.Context, c *invocation) error {
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
		cfg, err := demoConfig(ctx, dir, c.env)
		if err != nil {
			return err
		}
		pubLn, admLn, err := listen(cfg)
		if err != nil {
			return err
		}
		mr := miniredis.NewMiniRedis()
		if err := mr.Start(); err != nil {
			return fmt.Errorf("in-process Redis: %w", err)
		}
		defer mr.Close()
		logger := newLogger(c.stderr, cfg.LogLevel)
		rdb := redis.NewClient(&redis.Options{Addr: mr.Addr(), ContextTimeoutEnabled: true})
		d, err := connectWith(ctx, cfg, logger, rdb, withRedisTimeout(demoRedisTimeout), withoutBitfield())
		if err != nil {
			return err
		}
		defer d.Close()
		keys, err := demoKeys(ctx, d)
		if err != nil {
			return err
		}
		hooks, stopHooks, err := demoWebhooks(ctx, d, c.stdout)
		if err != nil {
			return err
		}
		defer stopHooks()
		return serveOn(ctx, cfg, d, logger, pubLn, admLn, func(pub, adm net.Addr) {
			printDemo(c.stdout, cfg, keys, hooks, pub, adm)
			printOtherTerminals(c.stdout, cfg, "redis://"+mr.Addr())
		})
	}
}

// demoConfig is the demo's configuration: defaults, SQLite databases in dir
// (made and filled when new), a random admin token, then the environment.
func demoConfig(ctx context.Context, dir string, env func(string) string) (config.Config, error) {
	cfg := config.Default()
	cfg.LiveDatabaseURL = "sqlite:" + filepath.Join(dir, "live.db")
	cfg.TestDatabaseURL = "sqlite:" + filepath.Join(dir, "sandbox.db")
	cfg.HistoryDatabaseURL = "sqlite:" + filepath.Join(dir, "gateway.db") // its migrations applied as it opens
	cfg.LogLevel = "warn"
	// The demo's webhook receiver is on this machine, in plain http.
	cfg.EventsAllowHTTP, cfg.EventsAllowedNetworks = true, "127.0.0.0/8,::1"
	if err := cfg.ApplyEnv(env); err != nil {
		return cfg, err
	}
	if cfg.AdminToken == "" {
		cfg.AdminToken = randomToken()
	}
	if cfg.WebhookSecretsKey == "" && !cfg.WebhookSecretsPlaintext {
		// The demo's Redis lives and dies with it: so does the key that
		// seals its webhook signing secrets.
		var err error
		if cfg.WebhookSecretsKey, _, err = seal.Generate(); err != nil {
			return cfg, err
		}
	}
	if err := cfg.Validate(config.NeedAll); err != nil {
		return cfg, err
	}
	if _, err := os.Stat(filepath.Join(dir, "live.db")); err == nil {
		return cfg, nil // made by an earlier run with --data
	}
	if _, err := gendata.SetUpSmall(ctx, cfg.LiveDatabaseURL, cfg.TestDatabaseURL, 1); err != nil {
		return cfg, fmt.Errorf("demo data: %w", err)
	}
	return cfg, nil
}

type demoKey struct{ company, mode, set, secret string }

// demoKeys makes company A a key of each scope set in each mode, and B and
// the suspended S a full LIVE key each.
func demoKeys(ctx context.Context, d *deps) ([]demoKey, error) {
	type want struct {
		company string
		mode    invoicing.Mode
		set     int
	}
	var wants []want
	for _, mode := range []invoicing.Mode{invoicing.Live, invoicing.Test} {
		for i := range demoKeySets {
			wants = append(wants, want{gendata.DemoCompanyA, mode, i})
		}
	}
	wants = append(wants, want{gendata.DemoCompanyB, invoicing.Live, 0}, want{gendata.DemoCompanySuspended, invoicing.Live, 0})
	keys := make([]demoKey, 0, len(wants))
	for _, w := range wants {
		ks := demoKeySets[w.set]
		scopes, _ := authz.ParseScopes(ks.scopes)
		v, err := d.admin.Keys.CreateKey(ctx, commandActor(), admin.KeySpec{CompanyID: w.company, Mode: w.mode, Scopes: scopes, Name: "demo " + ks.name})
		if err != nil {
			return nil, fmt.Errorf("demo key: %w", err)
		}
		keys = append(keys, demoKey{w.company, string(w.mode), ks.name, v.Key})
	}
	return keys, nil
}

// demoWebhooks starts the demo's webhook receiver on 127.0.0.1 and gives
// company A an endpoint to it in each mode, both at one URL (each event's
// body says its mode): every event of A is printed on w as it arrives,
// verified. It returns the receiver's address.
func demoWebhooks(ctx context.Context, d *deps, w io.Writer) (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("demo webhook receiver: %w", err)
	}
	printer := &hookPrinter{w: w}
	srv := &http.Server{Handler: printer, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	stop := func() { _ = srv.Close() }
	base := "http://" + ln.Addr().String() + "/webhooks"
	var secrets []string
	for _, m := range invoicing.Modes {
		v, err := d.admin.Webhooks.CreateWebhook(ctx, commandActor(), admin.WebhookSpec{CompanyID: gendata.DemoCompanyA, Mode: m,
			URL: base, Description: "the demo's receiver"})
		if err != nil {
			stop()
			return "", nil, fmt.Errorf("demo webhook endpoint: %w", err)
		}
		secrets = append(secrets, v.Secret)
	}
	if err := printer.trust(secrets...); err != nil {
		stop()
		return "", nil, err
	}
	return base, stop, nil
}

// printDemo prints where everything is, the keys, and curl lines that work
// as printed. Each fails visibly (--fail-with-body: exit 22 with the
// problem printed; -S: network errors shown), so that a newcomer's script
// that copies one notices an error instead of carrying on with a problem
// document as data.
func printDemo(w io.Writer, cfg config.Config, keys []demoKey, hooks string, pub, adm net.Addr) {
	base, admin := "http://"+hostPort(pub), "http://"+hostPort(adm)
	fmt.Fprintf(w, "Demo gateway ready on %s (admin API on %s, token %s)\n", base, hostPort(adm), cfg.AdminToken)
	fmt.Fprintf(w, "Data: %s (LIVE) and %s (TEST); the gateway's own (audit log): %s\n\n", cfg.LiveDatabaseURL, cfg.TestDatabaseURL, cfg.HistoryDatabaseURL)
	fmt.Fprintf(w, "API explorer:       %s%s   (paste a key below under Authentication)\n", base, apidocs.DocsPath)
	fmt.Fprintf(w, "OpenAPI document:   %s%s and %s%s\n", base, apidocs.JSONPath, base, apidocs.YAMLPath)
	fmt.Fprintf(w, "Postman collection: %s%s\n\n", base, apidocs.CollectionPath)
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
	fmt.Fprintf(w, "  curl -sS --fail-with-body %s '%s/api/v1/v1/invoices?pageSize=2'\n", hdr(a, gendata.DemoCompanyA), base)
	fmt.Fprintf(w, "  curl -sS --fail-with-body %s '%s/api/v1/v1/invoices?status=OVERDUE&type=FT'\n", hdr(a, gendata.DemoCompanyA), base)
	fmt.Fprintf(w, "  curl -sS --fail-with-body %s '%s/api/v1/v1/clients?search=lda'\n", hdr(a, gendata.DemoCompanyA), base)
	fmt.Fprintf(w, "  curl -sS --fail-with-body %s -H 'Content-Type: application/json' -d '{\"name\":\"Kianda Lda\",\"nif\":\"5417000001\",\"type\":\"COMPANY\",\"phone\":\"+244 923 456 789\"}' %s/api/v1/v1/clients\n", hdr(a, gendata.DemoCompanyA), base)
	fmt.Fprintf(w, "  curl -sS --fail-with-body %s %s/api/v1/v1/invoices   # TEST key: sandbox data\n", hdr(at, gendata.DemoCompanyA), base)
	fmt.Fprintf(w, "  curl -sS --fail-with-body -H \"Authorization: Bearer %s\" '%s/admin/v1/keys?companyId=%s'   # admin API\n", cfg.AdminToken, admin, gendata.DemoCompanyA)
	fmt.Fprintf(w, "\nAdmin console: %s%s (sign in with the admin token above)\n", admin, console.Path)
	fmt.Fprintf(w, "\nWebhooks: every event of company A is sent to the demo's receiver (%s/live and .../test),\n", hooks)
	fmt.Fprintln(w, "which prints each one here, its signature verified, and how long after the change it came.")
	fmt.Fprintln(w, "Create a client with the fourth curl line: its client.created event is printed within a second.")
}

// printOtherTerminals says how to run the other commands against this demo
// (its Redis and databases) from another terminal, with the webhook
// listener and triggers as the example.
func printOtherTerminals(w io.Writer, cfg config.Config, redisURL string) {
	fmt.Fprintln(w, "\nOther commands against this demo, from another terminal in this directory: first")
	fmt.Fprintf(w, "  export GATEWAY_REDIS_URL=%s GATEWAY_LIVE_DATABASE_URL=%s GATEWAY_TEST_DATABASE_URL=%s GATEWAY_HISTORY_DATABASE_URL=%s GATEWAY_EVENTS_ALLOW_HTTP=true GATEWAY_EVENTS_ALLOWED_NETWORKS=127.0.0.0/8 %s\n",
		redisURL, cfg.LiveDatabaseURL, cfg.TestDatabaseURL, cfg.HistoryDatabaseURL, demoSecretsEnv(cfg))
	fmt.Fprintln(w, "then, for example, receive company A's TEST events (forwarded to your handler with --forward-to URL) and make one:")
	fmt.Fprintf(w, "  go run ./cmd/gateway events listen --company %s\n", gendata.DemoCompanyA)
	fmt.Fprintf(w, "  go run ./cmd/gateway events trigger invoice.paid --company %s\n", gendata.DemoCompanyA)
	fmt.Fprintln(w, "\nPress Ctrl+C to stop.")
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

// demoSecretsEnv is the setting that lets another terminal's commands make
// and read the demo's webhook signing secrets: its key (or its choice of
// plain text).
func demoSecretsEnv(cfg config.Config) string {
	if cfg.WebhookSecretsPlaintext {
		return "GATEWAY_WEBHOOK_SECRETS_PLAINTEXT=true"
	}
	return "GATEWAY_WEBHOOK_SECRETS_KEY=" + cfg.WebhookSecretsKey
}
