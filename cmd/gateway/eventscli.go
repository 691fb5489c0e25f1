package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/invoicing-ao/gateway/admin"
	"github.com/invoicing-ao/gateway/backend/gendata"
	"github.com/invoicing-ao/gateway/client"
	"github.com/invoicing-ao/gateway/cmd/gateway/internal/config"
	"github.com/invoicing-ao/gateway/events"
	"github.com/invoicing-ao/gateway/invoicing"
)

// `gateway events listen` and `gateway events trigger`: webhooks on a
// developer's machine, as Stripe's CLI has them. listen registers a
// temporary TEST endpoint that points at itself, prints and verifies each
// delivery, and forwards it to the developer's handler; trigger makes a real
// change in the sandbox, so that a real event flows.

func eventsListenFlags(fs *flag.FlagSet) action {
	company := companyFlag(fs)
	forward := fs.String("forward-to", "", "forward each delivery to your handler at `URL`, its body and headers unchanged (Content-Type, User-Agent and the webhook-* headers the gateway sends), and print its answer")
	typesS := typesFlag(fs)
	listenAddr := fs.String("listen", "127.0.0.1:0", "`ADDR` to receive deliveries on; the gateway must be allowed to reach it (eventsAllowHTTP, eventsAllowedNetworks)")
	expire := fs.Duration("expire", time.Hour, "if this command is stopped without removing its endpoint, the endpoint expires after this `DURATION`")
	return func(ctx context.Context, c *invocation) error {
		types, err := parseTypesFlag(*typesS)
		if err != nil {
			return err
		}
		if *expire < time.Minute {
			return usagef("--expire %s: at least 1m", *expire)
		}
		fwd, err := checkForward(*forward)
		if err != nil {
			return err
		}
		ln, err := net.Listen("tcp", *listenAddr)
		if err != nil {
			return usagef("--listen %q: %v", *listenAddr, err)
		}
		defer ln.Close()
		d, err := c.open(ctx)
		if err != nil {
			return err
		}
		defer d.Close()
		ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
		defer stop()
		until := time.Now().Add(*expire)
		v, err := d.admin.Webhooks.CreateWebhook(ctx, commandActor(), admin.WebhookSpec{CompanyID: *company, Mode: invoicing.Test,
			URL: "http://" + hostPort(ln.Addr()) + "/webhooks", Types: types, ExpiresAt: &until,
			Description: "gateway events listen, " + commandActor()})
		if err != nil {
			if invoicing.KindOf(err) == invoicing.Invalid {
				return fmt.Errorf("%w\n(the gateway delivers only where its settings allow: for a listener on this machine, eventsAllowHTTP=true and eventsAllowedNetworks=127.0.0.0/8, as the demo has)", err)
			}
			return err
		}
		// Removed on the way out, whatever ends the command.
		defer func() {
			rctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if _, err := d.admin.Webhooks.DeleteWebhook(rctx, commandActor(), v.ID); err != nil {
				fmt.Fprintf(c.stderr, "gateway: endpoint %s not removed (%v); it expires at %s\n", v.ID, err, until.UTC().Format(time.RFC3339))
				return
			}
			fmt.Fprintf(c.stdout, "Removed endpoint %s.\n", v.ID)
		}()
		l := &listener{w: c.stdout, forward: fwd, client: &http.Client{Timeout: 10 * time.Second}}
		if l.verifier, err = client.NewWebhookVerifier(client.WebhookConfig{Secrets: []string{v.Secret}}); err != nil {
			return err
		}
		srv := &http.Server{Handler: l, ReadHeaderTimeout: 5 * time.Second}
		go func() { _ = srv.Serve(ln) }()
		defer srv.Close()
		fmt.Fprintf(c.stdout, "Listening for the TEST events of company %s (%s) on %s, as endpoint %s.\n", v.CompanyID, describeTypes(v.Types), v.URL, v.ID)
		fmt.Fprintf(c.stdout, "Signing secret (your handler verifies with it): %s\n", v.Secret)
		if fwd != "" {
			fmt.Fprintf(c.stdout, "Forwarding each delivery to %s.\n", fwd)
		}
		fmt.Fprintln(c.stdout, "Press Ctrl+C to stop; the endpoint is removed then.")
		// The endpoint is kept while this runs: its end moves forward.
		keep := time.NewTicker(*expire / 2)
		defer keep.Stop()
		for {
			select {
			case <-ctx.Done():
				return nil
			case <-keep.C:
				until = time.Now().Add(*expire)
				if _, err := d.events.UpdateWebhook(ctx, v.ID, events.Patch{ExpiresAt: &until}); err != nil && ctx.Err() == nil {
					fmt.Fprintf(c.stderr, "gateway: keeping endpoint %s: %v\n", v.ID, err)
				}
			}
		}
	}
}

// checkForward checks --forward-to: an http(s) URL that answers a
// connection now, so that a typo fails at once rather than on every event.
func checkForward(raw string) (string, error) {
	if raw == "" {
		return "", nil
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", usagef("--forward-to %q: must be an http or https URL such as http://localhost:3000/webhooks", raw)
	}
	host := u.Host
	if u.Port() == "" {
		host = net.JoinHostPort(u.Hostname(), map[string]string{"http": "80", "https": "443"}[u.Scheme])
	}
	conn, err := net.DialTimeout("tcp", host, 3*time.Second)
	if err != nil {
		return "", fmt.Errorf("--forward-to %s: cannot connect: %w (is your handler running?)", raw, err)
	}
	conn.Close()
	return u.String(), nil
}

// listener receives the deliveries of its endpoint: it prints each with
// the verification's result and forwards it.
type listener struct {
	mu       sync.Mutex // one delivery's lines at a time
	w        io.Writer
	verifier *client.WebhookVerifier
	forward  string
	client   *http.Client
}

func (l *listener) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil || r.Method != http.MethodPost {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	at := time.Now().Format("15:04:05")
	ev, verr := l.verifier.Verify(r.Header, body)
	line := ""
	if verr != nil {
		line = fmt.Sprintf("%s  %s  NOT VERIFIED: %v", at, r.Header.Get("webhook-id"), verr)
	} else {
		// Whose the event is, as its body says: what a receiver serving
		// several companies or both modes from one URL routes by.
		line = fmt.Sprintf("%s  %-28s %s  %s %s  %s  verified", at, ev.Type, ev.ID, ev.Mode, ev.CompanyID, describeData(ev.Data))
	}
	status := http.StatusNoContent
	if verr != nil {
		status = http.StatusBadRequest
	}
	if l.forward != "" {
		code, ferr := l.pass(r, body)
		switch {
		case ferr != nil:
			line += fmt.Sprintf("  → %s: %v", l.forward, ferr)
			status = http.StatusBadGateway
		default:
			line += fmt.Sprintf("  → %s: %d", l.forward, code)
			status = code // the gateway retries what your handler fails
		}
	}
	l.mu.Lock()
	fmt.Fprintln(l.w, line)
	l.mu.Unlock()
	w.WriteHeader(status)
}

// pass forwards a delivery, its body and its webhook headers unchanged, so
// that the handler verifies it as it would the gateway's.
func (l *listener) pass(r *http.Request, body []byte) (int, error) {
	req, err := http.NewRequestWithContext(r.Context(), http.MethodPost, l.forward, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	for _, h := range []string{"Content-Type", "User-Agent", "Webhook-Id", "Webhook-Timestamp", "Webhook-Signature"} {
		if v := r.Header.Get(h); v != "" {
			req.Header.Set(h, v)
		}
	}
	res, err := l.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return 0, err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10))
	res.Body.Close()
	return res.StatusCode, nil
}

func eventsTriggerFlags(fs *flag.FlagSet) action {
	company := companyFlag(fs)
	return func(ctx context.Context, c *invocation) error {
		typ := c.args[0]
		known := false
		for _, t := range gendata.Triggers {
			known = known || t == typ
		}
		if !known {
			return usagef("TYPE %q: one of %s", typ, strings.Join(gendata.Triggers, ", "))
		}
		cfg, err := c.config()
		if err != nil {
			return err
		}
		companyID, err := invoicing.ParseCompanyID(*company)
		if err != nil {
			return usagef("--company %q: a company id is a UUID", *company)
		}
		d, err := c.open(ctx) // the sandbox, to check the company
		if err != nil {
			return err
		}
		defer d.Close()
		if _, err := d.test.Company(ctx, companyID); err != nil {
			if invoicing.KindOf(err) == invoicing.NotFound {
				return fmt.Errorf("no company %s in the sandbox (%s)", companyID, config.RedactURL(cfg.TestDatabaseURL))
			}
			return err
		}
		id, err := gendata.Trigger(ctx, cfg.TestDatabaseURL, companyID, typ, time.Time{}) // at its transaction's start
		if errors.Is(err, gendata.ErrNothingToChange) {
			return fmt.Errorf("company %s has no client in the sandbox to change: trigger client.created first", companyID)
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(c.stdout, "Made %s %s change in the sandbox (%s): %s. Its event reaches company %s's TEST endpoints within a second.\n",
			article(typ), typ, config.RedactURL(cfg.TestDatabaseURL), id, companyID)
		return nil
	}
}
