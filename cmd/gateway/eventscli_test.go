package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
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
// gateway: a triggered change of each type in the sandbox reaches the
// listener as an event of that type, verified, and is forwarded to the
// developer's handler, which verifies it with the secret the listener
// printed; without --forward-to the listener prints and answers itself, and
// says NOT VERIFIED of a delivery it cannot verify; stopping the listener
// removes its endpoint; bad input says what is wrong and changes nothing.
func TestEventsListenAndTrigger(t *testing.T) {
	t.Parallel()
	vars := map[string]string{"GATEWAY_ADDR": "127.0.0.1:0", "GATEWAY_ADMIN_ADDR": "127.0.0.1:0", "GATEWAY_DRAIN_DELAY": "0s"}
	maps.Copy(vars, keepTestGC)
	env := eventsEnv(t, vars)
	co := gendata.DemoCompanyA

	// The gateway that detects and delivers.
	sctx, stopServe := context.WithCancel(context.Background())
	served := make(chan int, 1)
	var serveErr testenv.SyncBuffer
	go func() {
		served <- run(sctx, []string{"serve", "--config", "../../configs/gateway.yaml"}, io.Discard, &serveErr, env)
	}()
	t.Cleanup(func() { stopServe(); <-served })

	checkEventsRefusals(t, env, co)
	listenAndForward(t, env, co)
	listenAlone(t, env, co)
}

// eventsEnv is a CLI environment (cliEnv) whose webhooks may be delivered to
// this machine, with vars besides.
func eventsEnv(t *testing.T, vars map[string]string) func(string) string {
	t.Helper()
	base := cliEnv(t)
	all := map[string]string{"GATEWAY_EVENTS_ALLOW_HTTP": "true", "GATEWAY_EVENTS_ALLOWED_NETWORKS": "127.0.0.0/8"}
	for k, v := range vars {
		all[k] = v
	}
	return func(k string) string {
		if v, ok := all[k]; ok {
			return v
		}
		return base(k)
	}
}

// checkEventsRefusals: bad input says what is wrong, registers nothing and
// changes nothing.
func checkEventsRefusals(t *testing.T, env func(string) string, co string) {
	t.Helper()
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
}

// listenRun is a running `events listen`: what it prints, and its exit code
// once it ends.
type listenRun struct {
	stop      context.CancelFunc
	out, errs testenv.SyncBuffer
	exited    chan int
}

// startListen runs `events listen` with args until stopped.
func startListen(env func(string) string, args ...string) *listenRun {
	ctx, stop := context.WithCancel(context.Background())
	l := &listenRun{stop: stop, exited: make(chan int, 1)}
	go func() {
		l.exited <- run(ctx, append(append([]string{"events", "listen"}, args...), "--config", "../../configs/gateway.yaml"), &l.out, &l.errs, env)
	}()
	return l
}

// waitFor waits until the listener prints what re matches, and returns the
// match.
func (l *listenRun) waitFor(t *testing.T, re *regexp.Regexp) []string {
	t.Helper()
	return waitFor(t, &l.out, re, l.exited, &l.errs)
}

// stopped stops the listener, as Ctrl+C does, and checks that it ends well,
// saying so (removed), and that the company has no endpoint left.
func (l *listenRun) stopped(t *testing.T, env func(string) string, co, removed string) {
	t.Helper()
	l.stop()
	select {
	case code := <-l.exited:
		if code != 0 || !strings.Contains(l.out.String(), removed) {
			t.Errorf("listen ended %d:\n%s\n%s", code, l.out.String(), l.errs.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatal("listen did not stop")
	}
	if _, list, _ := gw(t, env, "webhooks", "list", "--company", co, "--json"); strings.TrimSpace(list) != "[]" {
		t.Errorf("the listener's endpoint is still there: %s", list)
	}
}

// listenAndForward: a triggered change of each type in the sandbox reaches
// the listener as an event of that type, verified, and is forwarded to the
// developer's handler, which verifies it with the secret the listener
// printed; stopping the listener removes its endpoint.
func listenAndForward(t *testing.T, env func(string) string, co string) {
	// The developer's handler, verifying with the listener's secret; it
	// keeps each event's type and resource id.
	var mu sync.Mutex
	var verifier *client.WebhookVerifier
	handled := map[string]int{} // "type resource id": deliveries verified
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
		var d struct{ ID string }
		_ = json.Unmarshal(ev.Data, &d)
		handled[ev.Type+" "+d.ID]++
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(handler.Close)

	l := startListen(env, "--company", co, "--forward-to", handler.URL+"/webhooks")
	secret := l.waitFor(t, regexp.MustCompile(`Signing secret \(your handler verifies with it\): (whsec_\S+)`))[1]
	v, err := client.NewWebhookVerifier(client.WebhookConfig{Secrets: []string{secret}})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	verifier = v
	mu.Unlock()

	// Every type: each trigger's change reaches the listener as an event of
	// its type about the invoice or client changed, verified, and the
	// handler takes it.
	changed := map[string]string{} // type: the id of what its trigger changed
	for _, typ := range gendata.Triggers {
		changed[typ] = trigger(t, env, typ, co)
	}
	// Each line says whose the event is, as its body does: TEST, and the company.
	for _, typ := range gendata.Triggers {
		l.waitFor(t, regexp.MustCompile(regexp.QuoteMeta(typ)+` +evt_[a-z2-7]{26}  TEST `+co+`  [^\n]*`+changed[typ]+`  verified  → `+regexp.QuoteMeta(handler.URL)+`/webhooks: 204\n`))
	}
	l.waitFor(t, regexp.MustCompile(`client\.created +evt_[a-z2-7]{26}  TEST `+co+`  client "Cliente de teste [0-9a-f]{8}" `+changed["client.created"]+`  verified`))
	mu.Lock()
	for _, typ := range gendata.Triggers {
		if handled[typ+" "+changed[typ]] == 0 {
			t.Errorf("the handler did not verify %s of %s (it took %v)", typ, changed[typ], handled)
		}
	}
	mu.Unlock()
	l.stopped(t, env, co, "Removed endpoint")
}

// listenAlone: without --forward-to, listen prints each delivery and
// answers it itself; one it cannot verify (its secret rotated at once
// behind its back) is printed as NOT VERIFIED and refused, so that the
// gateway retries it.
func listenAlone(t *testing.T, env func(string) string, co string) {
	l := startListen(env, "--company", co, "--types", "client.created,client.updated")
	ep := l.waitFor(t, regexp.MustCompile(`\(client\.created, client\.updated\) on \S+, as endpoint (ep_[a-z2-7]{26})\.`))[1]
	if strings.Contains(l.out.String(), "Forwarding") {
		t.Errorf("listen without --forward-to says it forwards:\n%s", l.out.String())
	}
	made := trigger(t, env, "client.created", co)
	l.waitFor(t, regexp.MustCompile(`(?m)client\.created +evt_[a-z2-7]{26}  TEST `+co+`  client "Cliente de teste [0-9a-f]{8}" `+made+`  verified$`))
	if code, rout, rerrs := gw(t, env, "webhooks", "rotate-secret", ep, "--overlap", "0"); code != 0 {
		t.Fatalf("rotate-secret: %d %s %s", code, rout, rerrs)
	}
	updated := trigger(t, env, "client.updated", co)
	refused := l.waitFor(t, regexp.MustCompile(`(?m)^\d\d:\d\d:\d\d  (evt_[a-z2-7]{26})  NOT VERIFIED: \S.*$`))
	if strings.Contains(l.out.String(), refused[1]+"  TEST") {
		t.Errorf("%s is printed as verified too:\n%s", refused[1], l.out.String())
	}
	// The refused delivery is the change's event, answered 400 by the
	// listener (its attempt is recorded once the answer is in: polled).
	testenv.Eventually(t, "the refused delivery's attempt in the endpoint's log", func() error {
		code, dout, derrs := gw(t, env, "webhooks", "deliveries", ep, "--type", "client.updated", "--json")
		var log struct {
			Data []struct {
				EventID, ResourceID string
				Log                 []struct{ Status int }
			}
		}
		if code != 0 || json.Unmarshal([]byte(dout), &log) != nil {
			t.Fatalf("deliveries: %d %s %s", code, dout, derrs)
		}
		if len(log.Data) != 1 || len(log.Data[0].Log) == 0 {
			return fmt.Errorf("not yet: %s", dout)
		}
		if d := log.Data[0]; d.EventID != refused[1] || d.ResourceID != updated || d.Log[0].Status != http.StatusBadRequest {
			t.Errorf("the refused delivery: %+v, want %s of %s answered 400", d, refused[1], updated)
		}
		return nil
	})
	l.stopped(t, env, co, "Removed endpoint "+ep)
}

// trigger makes a change of typ for company in the sandbox with `gateway
// events trigger` and returns the id of the invoice or client it changed.
func trigger(t *testing.T, env func(string) string, typ, company string) string {
	t.Helper()
	code, out, errs := gw(t, env, "events", "trigger", typ, "--company", company)
	a := "a" // a client.created change, an invoice.paid change
	if strings.HasPrefix(typ, "invoice.") {
		a = "an"
	}
	id := regexp.MustCompile(`^Made ` + a + ` ` + regexp.QuoteMeta(typ) + ` change in the sandbox \([^)]*\): ([0-9a-f-]{36})\. `).FindStringSubmatch(out)
	if code != 0 || id == nil {
		t.Fatalf("trigger %s: %d %s %s", typ, code, out, errs)
	}
	return id[1]
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
