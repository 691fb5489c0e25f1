package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/backend/gendata"
	"github.com/invoicing-ao/gateway/client"
	"github.com/invoicing-ao/gateway/internal/testenv"
)

// events listen and events trigger, word for word as docs/integrators.md
// and --help show them, against real PostgreSQL and Redis and a running
// gateway: a triggered change in the sandbox reaches the listener, verified,
// and is forwarded to the developer's handler, which verifies it with the
// secret the listener printed; stopping the listener removes its endpoint;
// bad input says what is wrong and changes nothing.
func TestEventsListenAndTrigger(t *testing.T) {
	base := cliEnv(t)
	vars := map[string]string{"GATEWAY_EVENTS_ALLOW_HTTP": "true", "GATEWAY_EVENTS_ALLOWED_NETWORKS": "127.0.0.0/8",
		"GATEWAY_ADDR": "127.0.0.1:0", "GATEWAY_ADMIN_ADDR": "127.0.0.1:0", "GATEWAY_DRAIN_DELAY": "0s"}
	env := func(k string) string {
		if v, ok := vars[k]; ok {
			return v
		}
		return base(k)
	}
	co := gendata.DemoCompanyA

	// The gateway that detects and delivers.
	sctx, stopServe := context.WithCancel(context.Background())
	served := make(chan int, 1)
	var serveErr testenv.SyncBuffer
	go func() {
		served <- run(sctx, []string{"serve", "--config", "../../configs/gateway.yaml"}, io.Discard, &serveErr, env)
	}()
	t.Cleanup(func() { stopServe(); <-served })

	// Bad input first: nothing registered, nothing changed.
	for _, bad := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"events", "trigger", "invoice.refunded", "--company", co}, 2, "invoice.refunded"},
		{[]string{"events", "trigger", "client.created", "--company", "0a5e7c1e-0000-4000-8000-0000000000ff"}, 1, "no company"},
		{[]string{"events", "trigger", "client.created"}, 2, "--company"},
		{[]string{"events", "listen", "--company", co, "--forward-to", "http://127.0.0.1:1/hooks"}, 1, "cannot connect"},
		{[]string{"events", "listen", "--company", co, "--forward-to", "localhost:3000"}, 2, "--forward-to"},
		{[]string{"events", "listen", "--company", "0a5e7c1e-0000-4000-8000-0000000000ff"}, 1, "No company"},
		{[]string{"events", "listen", "--company", co, "--types", "invoice.refunded"}, 2, "invoice.refunded"},
	} {
		if code, _, errs := gw(t, env, bad.args...); code != bad.code || !strings.Contains(errs, bad.want) {
			t.Errorf("%v: exit %d, %q; want %d and %q", bad.args, code, errs, bad.code, bad.want)
		}
	}
	if _, out, _ := gw(t, env, "webhooks", "list", "--company", co, "--json"); strings.TrimSpace(out) != "[]" {
		t.Fatalf("refused commands left endpoints: %s", out)
	}

	// The developer's handler, verifying with the listener's secret.
	var mu sync.Mutex
	var verifier *client.WebhookVerifier
	var handled []string
	handler := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		if verifier == nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		ev, err := verifier.Verify(r.Header, body)
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		handled = append(handled, ev.Type)
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(handler.Close)

	lctx, stopListen := context.WithCancel(context.Background())
	var out, errs testenv.SyncBuffer
	listened := make(chan int, 1)
	go func() {
		listened <- run(lctx, []string{"events", "listen", "--company", co, "--forward-to", handler.URL + "/webhooks", "--config", "../../configs/gateway.yaml"}, &out, &errs, env)
	}()
	secret := waitFor(t, &out, regexp.MustCompile(`Signing secret \(your handler verifies with it\): (whsec_\S+)`), listened, &errs)[1]
	v, err := client.NewWebhookVerifier(client.WebhookConfig{Secrets: []string{secret}})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	verifier = v
	mu.Unlock()

	code, tout, terrs := gw(t, env, "events", "trigger", "client.created", "--company", co)
	id := regexp.MustCompile(`: ([0-9a-f-]{36})\.`).FindStringSubmatch(tout)
	if code != 0 || id == nil {
		t.Fatalf("trigger: %d %s %s", code, tout, terrs)
	}
	waitFor(t, &out, regexp.MustCompile(`client\.created +evt_[a-z2-7]{26}  client "Cliente de teste [0-9a-f]{8}" `+id[1]+`  verified  → `+regexp.QuoteMeta(handler.URL)+`/webhooks: 204`), listened, &errs)
	mu.Lock()
	if len(handled) != 1 || handled[0] != "client.created" {
		t.Errorf("the handler verified %v", handled)
	}
	mu.Unlock()

	stopListen()
	select {
	case code := <-listened:
		if code != 0 || !strings.Contains(out.String(), "Removed endpoint") {
			t.Errorf("listen ended %d:\n%s\n%s", code, out.String(), errs.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatal("listen did not stop")
	}
	if _, list, _ := gw(t, env, "webhooks", "list", "--company", co, "--json"); strings.TrimSpace(list) != "[]" {
		t.Errorf("the listener's endpoint is still there: %s", list)
	}
}

// waitFor waits until out matches re (or the command exits, or a minute
// passes) and returns the match.
func waitFor(t *testing.T, out *testenv.SyncBuffer, re *regexp.Regexp, exited <-chan int, errs *testenv.SyncBuffer) []string {
	t.Helper()
	deadline := time.After(90 * time.Second)
	for {
		if m := re.FindStringSubmatch(out.String()); m != nil {
			return m
		}
		select {
		case code := <-exited:
			t.Fatalf("exited %d before printing %s:\n%s\n%s", code, re, out.String(), errs.String())
		case <-deadline:
			t.Fatalf("not printed within 90 s: %s\n%s\n%s", re, out.String(), errs.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
}
