package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/invoicing-ao/gateway/admin"
	"github.com/invoicing-ao/gateway/authz"
	"github.com/invoicing-ao/gateway/backend/gendata"
	"github.com/invoicing-ao/gateway/cmd/gateway/internal/config"
	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
)

type answer struct {
	status int
	body   map[string]any
	closed bool // the server asked to close the connection
	err    error
}

// get sends one request on a new connection.
func get(url, key string) answer {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return answer{err: err}
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("X-Company-Id", gendata.DemoCompanyA)
	}
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 30 * time.Second}
	res, err := c.Do(req)
	if err != nil {
		return answer{err: err}
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	a := answer{status: res.StatusCode, closed: res.Close}
	_ = json.Unmarshal(b, &a.body)
	return a
}

func refused(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return true
	}
	c.Close()
	return false
}

// SIGTERM (ctx canceled) on the real serve path: readiness turns 503 at once
// while the listener keeps serving for DrainDelay (a request sent then is
// answered), then the listener stops accepting, and a request that was in
// flight all along (held by a table lock) still completes with 200.
func TestGracefulShutdown(t *testing.T) {
	// Not parallel: the gateway runs in the test process, where its sub-second
	// Redis deadlines (a key's verification, a rate-limit decision) must not
	// compete with the parallel tests for the CPU.
	env := cliEnv(t)
	// Long enough that a busy machine still sends its requests within it.
	drain := 5 * time.Second
	cfg, d, key, clientID := shutdownGateway(t, env, drain)
	ctx := context.Background()
	logger := slog.New(slog.DiscardHandler)

	sctx, sigterm := context.WithCancel(ctx)
	defer sigterm()
	addrs := make(chan string, 1)
	served := make(chan error, 1)
	pubLn, admLn, err := listen(cfg)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		served <- serveOn(sctx, cfg, d, logger, pubLn, admLn, func(pub, _ net.Addr) { addrs <- pub.String() })
	}()
	var addr string
	select {
	case addr = <-addrs:
	case err := <-served:
		t.Fatalf("serveOn: %v", err)
	}
	base := "http://" + addr
	if a := get(base+"/readyz", ""); a.status != 200 {
		t.Fatalf("readyz before shutdown: %+v", a)
	}

	// A request in flight: its query waits on a table lock held by the test.
	tx := testenv.LockTable(t, env("GATEWAY_LIVE_DATABASE_URL"), "customers")
	inflight := requestHeld(t, tx, base+"/api/v1/v1/clients/"+clientID, key)

	sigterm()
	waitDraining(t, base)
	// Still accepted and served during the drain delay, on a connection the
	// server closes after the answer.
	if a := get(base+"/api/v1/v1/invoices?pageSize=1", key); a.status != 200 || !a.closed {
		t.Fatalf("request during the drain delay: status %d, connection closed %v, %v", a.status, a.closed, a.err)
	}

	testenv.Eventually(t, "the listener to stop accepting after the drain delay", func() error {
		return testenv.Want(refused(addr), true, "connection refused")
	})
	select {
	case a := <-inflight:
		t.Fatalf("the in-flight request ended before its query could: %+v", a)
	case err := <-served:
		t.Fatalf("listenAndServe returned with a request in flight: %v", err)
	default:
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if a := <-inflight; a.status != 200 || a.body["id"] != clientID {
		t.Fatalf("in-flight request: %+v", a)
	}
	select {
	case err := <-served:
		if err != nil {
			t.Fatalf("serveOn: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("listenAndServe did not return after the last request")
	}
	if !refused(addr) {
		t.Fatal("new connections accepted after shutdown")
	}
}

// shutdownGateway is the configuration and wiring of the shutdown test's
// gateway (drain delay drain, long query and shutdown timeouts), with a
// LIVE key of the demo's company A and one of its clients.
func shutdownGateway(t *testing.T, env func(string) string, drain time.Duration) (cfg config.Config, d *deps, key, clientID string) {
	t.Helper()
	vars := map[string]string{
		"GATEWAY_ADDR": "127.0.0.1:0", "GATEWAY_ADMIN_ADDR": "127.0.0.1:0",
		"GATEWAY_DRAIN_DELAY": drain.String(), "GATEWAY_QUERY_TIMEOUT": "20s", "GATEWAY_SHUTDOWN_TIMEOUT": "20s",
	}
	for _, k := range []string{"GATEWAY_REDIS_URL", "GATEWAY_REDIS_PREFIX", "GATEWAY_LIVE_DATABASE_URL", "GATEWAY_TEST_DATABASE_URL", "GATEWAY_HISTORY_DATABASE_URL"} {
		vars[k] = env(k)
	}
	cfg, err := config.Load("", envOf(vars), config.NeedAll)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	d, err = connect(ctx, cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	sc, _ := authz.ParseScopes("clients:read,invoices:read")
	k, err := d.admin.Keys.CreateKey(ctx, "test@local", admin.KeySpec{CompanyID: gendata.DemoCompanyA, Mode: invoicing.Live, Scopes: sc, Name: "shutdown"})
	if err != nil {
		t.Fatal(err)
	}
	clients, err := d.live.ListClients(ctx, gendata.DemoCompanyA, invoicing.ClientFilter{Page: 1, PageSize: 1})
	if err != nil || len(clients.Data) == 0 {
		t.Fatalf("a client to read: %v", err)
	}
	return cfg, d, k.Key, clients.Data[0].ID
}

// requestHeld sends a GET of url with key, and returns its answer to come
// once the request waits for the lock tx holds.
func requestHeld(t *testing.T, tx pgx.Tx, url, key string) <-chan answer {
	t.Helper()
	inflight := make(chan answer, 1)
	go func() { inflight <- get(url, key) }()
	testenv.Eventually(t, "the request to wait for the lock", func() error {
		waiting := 0
		if err := tx.QueryRow(t.Context(), "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'").Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		select {
		case a := <-inflight:
			t.Fatalf("the request did not wait for the lock: %+v", a)
		default:
		}
		return testenv.Want(waiting > 0, true, "a query waiting for a lock")
	})
	return inflight
}

// waitDraining waits for readiness to turn 503 (draining) while the
// listener still serves.
func waitDraining(t *testing.T, base string) {
	t.Helper()
	testenv.Eventually(t, "readiness to turn 503 (draining)", func() error {
		a := get(base+"/readyz", "")
		if a.err != nil {
			t.Fatalf("readyz did not turn 503 while the listener still served: %+v", a)
		}
		if a.status != 503 {
			return fmt.Errorf("readyz answered %d", a.status)
		}
		if checks, _ := a.body["checks"].(map[string]any); checks["shutdown"] != "draining" {
			t.Fatalf("readyz while draining: %+v", a.body)
		}
		return nil
	})
}
