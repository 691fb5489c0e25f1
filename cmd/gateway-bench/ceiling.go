package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/invoicing-ao/gateway/invoicing"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The ceiling of GET /clients/{id}: a bare Go HTTP service running the same
// query as the gateway's adapter (backend's clientCols, updated_at included:
// the API answers it) on a pool of the same size, with no key,
// limit, company check, logging or tracing. It runs as its own process (the
// gateway-bench binary re-executed with --serve-ceiling), as the gateway does, so
// both share the machine with the load generator alike.

const ceilingQuery = `SELECT c.id, c.name, c.nif, c.email, c.phone, c.address, c.kind, c.created_at, c.updated_at
FROM customers c
WHERE c.company_id = $1 AND c.id = $2 AND c.deleted_at IS NULL`

// serveCeilingMain serves the bare service until ctx ends; it prints
// "listening ADDR" once ready.
func serveCeilingMain(ctx context.Context, addr, database string, conns int, stdout io.Writer) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg, err := pgxpool.ParseConfig(database)
	if err != nil {
		return errors.New("ceiling: malformed database URL")
	}
	cfg.MaxConns = int32(conns)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer pool.Close()
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+apiBase+"/clients/{id}", func(w http.ResponseWriter, r *http.Request) {
		var c invoicing.Client // the same resource, encoded the same way
		err := pool.QueryRow(r.Context(), ceilingQuery, r.Header.Get("X-Company-Id"), r.PathValue("id")).
			Scan(&c.ID, &c.Name, &c.NIF, &c.Email, &c.Phone, &c.Address, &c.Type, &c.CreatedAt.Time, &c.UpdatedAt.Time)
		if err != nil {
			http.Error(w, `{"code":"not_found"}`, http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(c)
	})
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	fmt.Fprintf(stdout, "listening %s\n", ln.Addr())
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// startCeiling runs the bare service in a child process and returns its
// base URL, its process id and a stop function.
func startCeiling(ctx context.Context, database string, conns int) (string, int, func(), error) {
	if database == "" {
		return "", 0, nil, fmt.Errorf("%w: --ceiling needs --database", errUsage)
	}
	exe, err := os.Executable()
	if err != nil {
		return "", 0, nil, err
	}
	cmd := exec.CommandContext(ctx, exe, "--serve-ceiling", "127.0.0.1:0",
		"--database", database, "--ceiling-db-conns", fmt.Sprint(conns))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", 0, nil, err
	}
	if err := cmd.Start(); err != nil {
		return "", 0, nil, err
	}
	stop := func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "listening ")
	if err != nil || !ok {
		stop()
		return "", 0, nil, fmt.Errorf("ceiling did not start: %q %v", line, err)
	}
	return "http://" + addr, cmd.Process.Pid, stop, nil
}
