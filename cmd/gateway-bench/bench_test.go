package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/invoicing-ao/gateway/admin"
	"github.com/invoicing-ao/gateway/authz"
	"github.com/invoicing-ao/gateway/backend"
	"github.com/invoicing-ao/gateway/backend/gendata"
	"github.com/invoicing-ao/gateway/events"
	"github.com/invoicing-ao/gateway/gateway"
	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
	"github.com/invoicing-ao/gateway/tenants"
	"github.com/invoicing-ao/gateway/web"
)

// target is an in-process gateway on this test's own databases (the demo
// data) and Redis prefix on the real services, with the gateway command's
// default limits.
type target struct {
	pub, admin, adminToken string
	liveURL                string
	live                   *backend.Store
	keys                   *authz.Keyring
	limiter                *tenants.Limiter
	events                 *events.Service // startGatewayEvents
}

func startGateway(t *testing.T) *target { return startGatewayEvents(t, nil) }

// startGatewayEvents starts the gateway with webhooks when ev is not nil:
// the admin API manages endpoints, and detection (on the live database) and
// delivery run, with ev's settings, until the test ends.
func startGatewayEvents(t *testing.T, ev *events.Config) *target {
	t.Helper()
	ctx := context.Background()
	g := &target{adminToken: "bench-admin-token-0123456789", liveURL: testenv.Postgres(t)}
	testURL := testenv.Postgres(t)
	if _, err := gendata.SetUpSmall(ctx, g.liveURL, testURL, 3); err != nil {
		t.Fatal(err)
	}
	open := func(url string) *backend.Store {
		st, err := backend.Open(ctx, backend.Config{URL: url})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(st.Close)
		return st
	}
	rdb, prefix := testenv.Redis(t)
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	g.live = open(g.liveURL)
	g.keys = authz.New(authz.Config{Redis: rdb, Prefix: prefix + "authz:", Logger: logger})
	t.Cleanup(func() { _ = g.keys.Close() })
	g.limiter = tenants.New(tenants.Config{Redis: rdb, Prefix: prefix + "tenants:", Logger: logger,
		LiveDefault: tenants.Limit{Rate: 50, Burst: 100}, TestDefault: tenants.Limit{Rate: 10, Burst: 20}})
	srv := gateway.New(gateway.Config{Live: g.live, Test: open(testURL), Keys: g.keys, Limiter: g.limiter, Logger: logger})
	acfg := admin.Config{Keys: g.keys, Limiter: g.limiter, Companies: g.live, Token: g.adminToken, Logger: logger}
	if ev != nil {
		cfg := *ev
		cfg.Redis, cfg.Prefix, cfg.Logger = rdb, prefix+"events:", logger
		cfg.Sources = map[invoicing.Mode]events.Source{invoicing.Live: g.live.Changes()}
		var err error
		if g.events, err = events.New(cfg); err != nil {
			t.Fatal(err)
		}
		acfg.Webhooks = g.events
		ctx, cancel := context.WithCancel(ctx)
		ran := make(chan struct{})
		go func() { defer close(ran); g.events.Run(ctx) }()
		t.Cleanup(func() { cancel(); <-ran })
	}
	svc := admin.New(acfg)
	pub, adm := httptest.NewServer(srv.Handler()), httptest.NewServer(web.Listener(web.Config{Logger: logger, HostCheck: true}, srv.Health, svc.Routes))
	t.Cleanup(pub.Close)
	t.Cleanup(adm.Close)
	g.pub, g.admin = pub.URL, adm.URL
	return g
}

// gateway-bench against an in-process gateway on the real services: it
// creates its keys, lifts the limits, runs every operation of the mix for a
// second, reports requests and no transport error, and undoes its changes.
func TestBenchCommand(t *testing.T) {
	t.Parallel()
	g := startGateway(t)
	ctx := context.Background()
	companies := []string{gendata.DemoCompanyA, gendata.DemoCompanyB}
	var out, errb strings.Builder
	code := run(ctx, []string{"--url", g.pub, "--admin-url", g.admin, "--admin-token", g.adminToken,
		"--company", strings.Join(companies, ","), "--keys-per-company", "2", "--raise-limits",
		"--duration", "1s", "--warmup", "0s", "--connections", "4",
		"--pid", strconv.Itoa(os.Getpid())}, &out, &errb, noEnv) // the gateway runs in this process
	if code != 0 {
		t.Fatalf("bench: %d %s %s", code, errb.String(), out.String())
	}
	report := out.String()
	t.Log(report)
	m := regexp.MustCompile(`== gateway: (\d+) requests .* transport errors (\d+)`).FindStringSubmatch(report)
	if m == nil {
		t.Fatalf("no summary line:\n%s", report)
	}
	// Any number of requests: how many one second holds is the machine's
	// speed (13 on a busy 2-core machine), not the tool's correctness.
	if n, _ := strconv.Atoi(m[1]); n == 0 || m[2] != "0" {
		t.Fatalf("%s requests, %s transport errors:\n%s", m[1], m[2], report)
	}
	// Operations are drawn by weight: a busy machine's second may draw too
	// few requests for every one to come up, so each is looked for only
	// when the run made enough for the rarest to be all but certain.
	n, _ := strconv.Atoi(m[1])
	for _, op := range benchOps {
		if op.weight == 0 || n < 200 {
			continue // a weight of 0: only on its own (--mix)
		}
		if !regexp.MustCompile(`(?m)^` + op.name + ` +\d+`).MatchString(report) {
			t.Errorf("operation %s missing from the report:\n%s", op.name, report)
		}
	}
	if strings.Contains(report, " 5") && regexp.MustCompile(`\b5\d\d:\d+`).MatchString(report) {
		t.Errorf("server errors under load:\n%s", report)
	}
	if !strings.Contains(report, "p99") || !regexp.MustCompile(`(?m)^all +\d+ +\d+ +[\d.]+ms`).MatchString(report) {
		t.Errorf("no percentiles:\n%s", report)
	}
	// This process served (and sent) every request: it used CPU for them.
	if m := regexp.MustCompile(`CPU per request, gateway \(pid \d+\): ([\d.]+) µs`).FindStringSubmatch(report); m == nil || m[1] == "0.0" {
		t.Errorf("no CPU per request of the gateway:\n%s", report)
	}

	// Undone: the keys it made are revoked, the limits back to the defaults.
	for _, co := range companies {
		assertKeysRevoked(t, g, co)
		lim, err := g.limiter.Limits(ctx, co)
		if err != nil || lim.LiveCustom {
			t.Errorf("limits of %s not reset: %+v %v", co, lim, err)
		}
	}
}

// The ceiling service answers GET /clients/{id} as the gateway does.
// --walk copies a company's whole list by cursor and by page number and
// counts the same items both ways.
func TestWalk(t *testing.T) {
	t.Parallel()
	g := startGateway(t)
	var out, errb strings.Builder
	code := run(context.Background(), []string{"--url", g.pub, "--admin-url", g.admin, "--admin-token", g.adminToken,
		"--company", gendata.DemoCompanyA, "--raise-limits", "--walk", "invoices", "--page-size", "7",
		"--changes-since", "100000h", "--duration", "200ms"}, &out, &errb, noEnv)
	if code != 0 {
		t.Fatalf("walk: %d %s %s", code, errb.String(), out.String())
	}
	report := out.String()
	t.Log(report)
	m := regexp.MustCompile(`(?m)^walk invoices by (cursor|page), 7 per page: (\d+) items in (\d+) pages`).FindAllStringSubmatch(report, -1)
	if len(m) != 2 || m[0][2] != m[1][2] || m[0][2] == "0" {
		t.Fatalf("want two walks of the same items:\n%s", report)
	}
	if !regexp.MustCompile(`changes of invoices since 100000h0m0s ago, first page, one connection: [1-9]\d* requests`).MatchString(report) {
		t.Fatalf("no changes line:\n%s", report)
	}
}

func TestCeilingService(t *testing.T) {
	t.Parallel()
	g := startGateway(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- serveCeilingMain(ctx, "127.0.0.1:0", g.liveURL, 2, pw) }()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	base := "http://" + strings.TrimSpace(strings.TrimPrefix(line, "listening "))

	page, err := g.live.ListClients(ctx, gendata.DemoCompanyA, invoicing.ClientFilter{Page: 1, PageSize: 5})
	if err != nil || len(page.Data) == 0 {
		t.Fatalf("clients: %v", err)
	}
	want := page.Data[0]
	get := func(company string) (int, map[string]any) {
		req, _ := http.NewRequest(http.MethodGet, base+apiBase+"/clients/"+want.ID, nil)
		req.Header.Set("X-Company-Id", company)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var got map[string]any
		_ = json.NewDecoder(res.Body).Decode(&got)
		return res.StatusCode, got
	}
	// The same row (the bare service maps nothing: kind and phone stay raw).
	code, got := get(gendata.DemoCompanyA)
	wantAt, _ := json.Marshal(want.CreatedAt)
	wantUp, _ := json.Marshal(want.UpdatedAt)
	if code != 200 || got["id"] != want.ID || got["name"] != want.Name || `"`+got["createdAt"].(string)+`"` != string(wantAt) ||
		`"`+got["updatedAt"].(string)+`"` != string(wantUp) {
		t.Errorf("ceiling: %d %v, want %+v", code, got, want)
	}
	if code, _ := get(gendata.DemoCompanyB); code != 404 {
		t.Errorf("another company's client: %d, want 404", code)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("ceiling: %v", err)
	}
}

// noEnv is an empty environment: no GATEWAY_* variable reaches the flags'
// defaults.
func noEnv(string) string { return "" }

// assertKeysRevoked checks that the company has no key left active.
func assertKeysRevoked(t *testing.T, g *target, co string) {
	t.Helper()
	keys, err := g.keys.List(context.Background(), co)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if k.State != authz.StateRevoked {
			t.Errorf("key %s of %s left %s", k.ID, co, k.State)
		}
	}
}
