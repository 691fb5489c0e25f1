package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/invoicing-ao/gateway/backend"
	"github.com/invoicing-ao/gateway/backend/gendata"
	"github.com/invoicing-ao/gateway/events"
	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
)

// listedEndpoint is what the expiry test reads of `webhooks list --json`.
type listedEndpoint struct {
	ID        string
	ExpiresAt *time.Time `json:"expiresAt"`
}

// listEndpoints is the company's endpoints, by id.
func listEndpoints(t *testing.T, env func(string) string, co string) map[string]listedEndpoint {
	t.Helper()
	code, out, errs := gw(t, env, "webhooks", "list", "--company", co, "--json")
	var eps []listedEndpoint
	if code != 0 || json.Unmarshal([]byte(out), &eps) != nil {
		t.Fatalf("list: %d %s %s", code, out, errs)
	}
	m := map[string]listedEndpoint{}
	for _, e := range eps {
		m[e.ID] = e
	}
	return m
}

// runEventsAhead runs the events pipeline on env's Redis and sandbox, as
// `gateway serve` runs it but ahead of the clock by ahead and sweeping
// often, until the test ends.
func runEventsAhead(t *testing.T, env func(string) string, ahead time.Duration) {
	t.Helper()
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
	ev, err := events.New(events.Config{Redis: rdb, Prefix: env("GATEWAY_REDIS_PREFIX") + "events:", Sources: map[invoicing.Mode]events.Source{invoicing.Test: sandbox.Changes()},
		Tick: 50 * time.Millisecond, Sweep: 200 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Now: func() time.Time { return time.Now().Add(ahead) }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { defer close(ran); ev.Run(ctx) }()
	t.Cleanup(func() { stop(); <-ran })
}

// An abandoned listener's endpoint expires: `events listen --expire 1m`
// killed (no Ctrl-C: it cannot remove its endpoint) leaves an endpoint that
// carries its end, and the events pipeline removes it once that time is
// over, and only it. The pipeline runs here on a clock ahead of the
// expiry, so that the test waits for a sweep, not for the minute.
func TestEventsListenAbandonedEndpointExpires(t *testing.T) {
	t.Parallel()
	env := eventsEnv(t, nil)
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
		"GATEWAY_HISTORY_DATABASE_URL", "GATEWAY_EVENTS_ALLOW_HTTP", "GATEWAY_EVENTS_ALLOWED_NETWORKS", "GATEWAY_WEBHOOK_SECRETS_KEY"} {
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

	list := func() map[string]listedEndpoint { return listEndpoints(t, env, co) }
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
	runEventsAhead(t, env, 2*time.Minute)
	testenv.Eventually(t, "the expired endpoint "+ep+" removed", func() error {
		eps = list()
		if _, ok := eps[ep]; ok {
			return fmt.Errorf("still listed: %+v", eps)
		}
		return nil
	})
	if _, ok := eps[kept.ID]; !ok || len(eps) != 1 {
		t.Errorf("after the expiry, the company's endpoints are %+v; want %s alone", eps, kept.ID)
	}
}
