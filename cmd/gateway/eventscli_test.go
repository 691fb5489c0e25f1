package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/invoicing-ao/gateway/backend"
	"github.com/invoicing-ao/gateway/backend/gendata"
	"github.com/invoicing-ao/gateway/client"
	"github.com/invoicing-ao/gateway/events"
	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
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

	// Every type: each trigger's change reaches the listener as an event of
	// its type about the invoice or client changed, verified, and the
	// handler takes it.
	changed := map[string]string{} // type: the id of what its trigger changed
	for _, typ := range gendata.Triggers {
		changed[typ] = trigger(t, env, typ, co)
	}
	// Each line says whose the event is, as its body does: TEST, and the company.
	for _, typ := range gendata.Triggers {
		waitFor(t, &out, regexp.MustCompile(regexp.QuoteMeta(typ)+` +evt_[a-z2-7]{26}  TEST `+co+`  [^\n]*`+changed[typ]+`  verified  → `+regexp.QuoteMeta(handler.URL)+`/webhooks: 204\n`), listened, &errs)
	}
	waitFor(t, &out, regexp.MustCompile(`client\.created +evt_[a-z2-7]{26}  TEST `+co+`  client "Cliente de teste [0-9a-f]{8}" `+changed["client.created"]+`  verified`), listened, &errs)
	mu.Lock()
	for _, typ := range gendata.Triggers {
		if handled[typ+" "+changed[typ]] == 0 {
			t.Errorf("the handler did not verify %s of %s (it took %v)", typ, changed[typ], handled)
		}
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

	// Without --forward-to, listen prints each delivery and answers it
	// itself; one it cannot verify (its secret rotated at once behind its
	// back) is printed as NOT VERIFIED and refused, so that the gateway
	// retries it.
	lctx, stopListen = context.WithCancel(context.Background())
	var out2, errs2 testenv.SyncBuffer
	listened = make(chan int, 1)
	go func() {
		listened <- run(lctx, []string{"events", "listen", "--company", co, "--types", "client.created,client.updated", "--config", "../../configs/gateway.yaml"}, &out2, &errs2, env)
	}()
	ep := waitFor(t, &out2, regexp.MustCompile(`\(client\.created, client\.updated\) on \S+, as endpoint (ep_[a-z2-7]{26})\.`), listened, &errs2)[1]
	if strings.Contains(out2.String(), "Forwarding") {
		t.Errorf("listen without --forward-to says it forwards:\n%s", out2.String())
	}
	made := trigger(t, env, "client.created", co)
	waitFor(t, &out2, regexp.MustCompile(`(?m)client\.created +evt_[a-z2-7]{26}  TEST `+co+`  client "Cliente de teste [0-9a-f]{8}" `+made+`  verified$`), listened, &errs2)
	if code, rout, rerrs := gw(t, env, "webhooks", "rotate-secret", ep, "--overlap", "0"); code != 0 {
		t.Fatalf("rotate-secret: %d %s %s", code, rout, rerrs)
	}
	updated := trigger(t, env, "client.updated", co)
	refused := waitFor(t, &out2, regexp.MustCompile(`(?m)^\d\d:\d\d:\d\d  (evt_[a-z2-7]{26})  NOT VERIFIED: \S.*$`), listened, &errs2)
	if strings.Contains(out2.String(), refused[1]+"  TEST") {
		t.Errorf("%s is printed as verified too:\n%s", refused[1], out2.String())
	}
	// The refused delivery is the change's event, answered 400 by the
	// listener (its attempt is recorded once the answer is in: polled).
	deadline := time.Now().Add(90 * time.Second)
	for {
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
		if len(log.Data) == 1 && len(log.Data[0].Log) > 0 {
			if d := log.Data[0]; d.EventID != refused[1] || d.ResourceID != updated || d.Log[0].Status != http.StatusBadRequest {
				t.Errorf("the refused delivery: %+v, want %s of %s answered 400", d, refused[1], updated)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the refused delivery's attempt is not in the endpoint's log within 90 s: %s", dout)
		}
		time.Sleep(100 * time.Millisecond)
	}
	stopListen()
	select {
	case code := <-listened:
		if code != 0 || !strings.Contains(out2.String(), "Removed endpoint "+ep) {
			t.Errorf("listen ended %d:\n%s\n%s", code, out2.String(), errs2.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatal("listen did not stop")
	}
	if _, list, _ := gw(t, env, "webhooks", "list", "--company", co, "--json"); strings.TrimSpace(list) != "[]" {
		t.Errorf("the listener's endpoint is still there: %s", list)
	}
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

// An abandoned listener's endpoint expires: `events listen --expire 1m`
// killed (no Ctrl-C: it cannot remove its endpoint) leaves an endpoint that
// carries its end, and the events pipeline removes it once that time is
// over, and only it. The pipeline runs here on a clock ahead of the
// expiry, so that the test waits for a sweep, not for the minute.
func TestEventsListenAbandonedEndpointExpires(t *testing.T) {
	base := cliEnv(t)
	vars := map[string]string{"GATEWAY_EVENTS_ALLOW_HTTP": "true", "GATEWAY_EVENTS_ALLOWED_NETWORKS": "127.0.0.0/8"}
	env := func(k string) string {
		if v, ok := vars[k]; ok {
			return v
		}
		return base(k)
	}
	co := gendata.DemoCompanyA
	bin := buildBinary(t)

	// An endpoint of the company's own, in the same mode, which stays.
	code, out, errs := gw(t, env, "webhooks", "create", "--company", co, "--mode", "TEST", "--url", "https://93.184.216.34/webhooks", "--json")
	var kept struct{ ID string }
	if code != 0 || json.Unmarshal([]byte(out), &kept) != nil || kept.ID == "" {
		t.Fatalf("create: %d %s %s", code, out, errs)
	}

	started := time.Now()
	cmd := exec.Command(bin, "events", "listen", "--company", co, "--expire", "1m", "--config", "../../configs/gateway.yaml")
	cmd.Env = os.Environ()
	for _, k := range []string{"GATEWAY_REDIS_URL", "GATEWAY_REDIS_PREFIX", "GATEWAY_LIVE_DATABASE_URL", "GATEWAY_TEST_DATABASE_URL",
		"GATEWAY_EVENTS_ALLOW_HTTP", "GATEWAY_EVENTS_ALLOWED_NETWORKS", "GATEWAY_WEBHOOK_SECRETS_KEY"} {
		cmd.Env = append(cmd.Env, k+"="+env(k))
	}
	var lout, lerrs testenv.SyncBuffer
	cmd.Stdout, cmd.Stderr = &lout, &lerrs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan int, 1)
	go func() { _ = cmd.Wait(); exited <- cmd.ProcessState.ExitCode() }()
	ep := waitFor(t, &lout, regexp.MustCompile(`as endpoint (ep_[a-z2-7]{26})\.`), exited, &lerrs)[1]
	seen := time.Now()
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-exited
	if strings.Contains(lout.String(), "Removed endpoint") {
		t.Fatalf("the killed listener removed its endpoint:\n%s", lout.String())
	}

	type listed struct {
		ID        string
		ExpiresAt *time.Time `json:"expiresAt"`
	}
	list := func() map[string]listed {
		t.Helper()
		code, out, errs := gw(t, env, "webhooks", "list", "--company", co, "--json")
		var eps []listed
		if code != 0 || json.Unmarshal([]byte(out), &eps) != nil {
			t.Fatalf("list: %d %s %s", code, out, errs)
		}
		m := map[string]listed{}
		for _, e := range eps {
			m[e.ID] = e
		}
		return m
	}
	// Left behind, it carries its end: a minute after it was made.
	eps := list()
	left, ok := eps[ep]
	if !ok || left.ExpiresAt == nil || left.ExpiresAt.Before(started.Add(time.Minute-time.Second)) || left.ExpiresAt.After(seen.Add(time.Minute+time.Second)) {
		t.Fatalf("the listener's endpoint %s, made between %s and %s with --expire 1m: %+v", ep, started.Format(time.RFC3339Nano), seen.Format(time.RFC3339Nano), eps)
	}
	if eps[kept.ID].ExpiresAt != nil {
		t.Fatalf("an endpoint made by webhooks create expires: %+v", eps[kept.ID])
	}

	// The pipeline, as `gateway serve` runs it, but two minutes ahead and
	// sweeping often: it removes the expired endpoint.
	opt, err := redis.ParseURL(env("GATEWAY_REDIS_URL"))
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { _ = rdb.Close() })
	sandbox, err := backend.Open(context.Background(), backend.Config{URL: env("GATEWAY_TEST_DATABASE_URL")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sandbox.Close)
	ev, err := events.New(events.Config{Redis: rdb, Prefix: env("GATEWAY_REDIS_PREFIX") + "events:", Sources: map[invoicing.Mode]events.Source{invoicing.Test: sandbox},
		Tick: 50 * time.Millisecond, Sweep: 200 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Now: func() time.Time { return time.Now().Add(2 * time.Minute) }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { defer close(ran); ev.Run(ctx) }()
	t.Cleanup(func() { stop(); <-ran })
	deadline := time.Now().Add(90 * time.Second)
	for {
		eps = list()
		if _, ok := eps[ep]; !ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the expired endpoint %s is still there after 90 s: %+v", ep, eps)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, ok := eps[kept.ID]; !ok || len(eps) != 1 {
		t.Errorf("after the expiry, the company's endpoints are %+v; want %s alone", eps, kept.ID)
	}
}
