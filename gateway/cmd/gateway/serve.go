package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/invoicing-ao/gateway/gateway"
	"github.com/invoicing-ao/gateway/internal/logbuf"
)

// defaultConfigFile is read when it exists and --config is not given.
const defaultConfigFile = "configs/gateway.yaml"

// configFlag registers --config on fs and returns a loader for after Parse.
func configFlag(fs *flag.FlagSet, env func(string) string) func() (Config, error) {
	path := fs.String("config", "", "configuration file (default "+defaultConfigFile+" when it exists)")
	return func() (Config, error) {
		p := *path
		if p == "" {
			if _, err := os.Stat(defaultConfigFile); err == nil {
				p = defaultConfigFile
			}
		}
		return loadConfig(p, env)
	}
}

func cmdServe(ctx context.Context, args []string, stdout, stderr io.Writer, env func(string) string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	load := configFlag(fs, env)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, pos[0])
	}
	cfg, err := load()
	if err != nil {
		return err
	}
	// One write per 100 ms instead of one per request: a write system call
	// per access-log line was 5 % of the CPU under load (internal/logbuf).
	logOut := logbuf.New(stderr, logbuf.Config{})
	defer logOut.Close() // last: the shutdown lines are logged before it
	logger := newLogger(logOut, cfg.LogLevel)
	gc := tuneGC(env)
	tel, err := setupTelemetry(ctx, versionString())
	if err != nil {
		return err
	}
	tel.install(logger)
	defer tel.flush(logger) // after d.Close: the last spans are ended by then
	d, err := connect(ctx, cfg, logger)
	if err != nil {
		return err
	}
	defer d.Close()
	return listenAndServe(ctx, cfg, d, logger, func(pub, adm net.Addr) {
		logger.Info("gateway listening", "public", pub.String(), "admin", adm.String(), "version", versionString(), "tracing", tel.describe, "gc", gc)
	})
}

// listenAndServe runs the public and admin listeners until SIGINT/SIGTERM or
// ctx ends, then drains: readiness turns false first and the listeners keep
// serving for DrainDelay (so load balancers notice and stop sending), then
// they stop accepting and requests in flight finish within ShutdownTimeout.
// A second signal ends the process at once.
func listenAndServe(ctx context.Context, cfg Config, d *deps, logger *slog.Logger, ready func(pub, adm net.Addr)) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	pubLn, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("setting %s: %w", settingName("Addr"), err)
	}
	admLn, err := net.Listen("tcp", cfg.AdminAddr)
	if err != nil {
		pubLn.Close()
		return fmt.Errorf("setting %s: %w", settingName("AdminAddr"), err)
	}
	newServer := func(h http.Handler) *http.Server {
		// The defaults: 5s to send the request head, 16 KiB of headers.
		return gateway.NewHTTPServer(h, gateway.HTTPConfig{ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)})
	}
	pub, adm := newServer(d.server.Handler()), newServer(d.server.AdminHandler())
	errc := make(chan error, 2)
	go func() { errc <- pub.Serve(pubLn) }()
	go func() { errc <- adm.Serve(admLn) }()
	if ready != nil {
		ready(pubLn.Addr(), admLn.Addr())
	}
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	stop()
	logger.Info("shutting down: readiness off, draining requests in flight",
		"drainDelay", cfg.DrainDelay.String(), "timeout", cfg.ShutdownTimeout.String())
	d.server.Drain()
	// Each connection closes after its current answer: keep-alive clients
	// reconnect, through the load balancer, to another instance.
	pub.SetKeepAlivesEnabled(false)
	time.Sleep(cfg.DrainDelay)
	sctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	err = errors.Join(pub.Shutdown(sctx), adm.Shutdown(sctx))
	if err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	logger.Info("stopped")
	return nil
}
