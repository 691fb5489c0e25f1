package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/invoicing-ao/gateway/cmd/gateway/internal/config"
	"github.com/invoicing-ao/gateway/internal/logbuf"
	"github.com/invoicing-ao/gateway/web"
)

// cmdServe runs the gateway: every setting is checked and both listeners
// are bound before anything connects, then it starts whatever is down
// (health.go) and serves until SIGINT/SIGTERM.
func cmdServe(ctx context.Context, c *invocation) error {
	cfg, err := c.config()
	if err != nil {
		return err
	}
	tel, err := setupTelemetry(ctx, versionString()) // checks the OTEL_* variables
	if err != nil {
		return err
	}
	pubLn, admLn, err := listen(cfg)
	if err != nil {
		return err
	}
	// One write per 100 ms instead of one per request: a write system call
	// per access-log line was 5 % of the CPU under load (internal/logbuf).
	logOut := logbuf.New(c.stderr, logbuf.Config{})
	defer logOut.Close() // last: the shutdown lines are logged before it
	logger := newLogger(logOut, cfg.LogLevel)
	redisLog.Store(logger)
	gc := tuneGC(c.env)
	tel.install(logger)
	defer tel.flush(logger) // after d.Close: the last spans are ended by then
	d, err := connect(ctx, cfg, logger, withLazy())
	if err != nil {
		pubLn.Close()
		admLn.Close()
		return err
	}
	defer d.Close()
	// What Redis allows: a Redis that may evict the control plane's
	// records is refused, one that may lose it otherwise is named; then
	// read each minute (redisguard.go).
	if err := d.guard.startup(cfg); err != nil {
		pubLn.Close()
		admLn.Close()
		return err
	}
	wctx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	// The gateway's database: migrated now, or once it answers; one this
	// binary must not use is refused here (historydb.go).
	if err := watchHistory(wctx, d, logger, defaultWatch.first); err != nil {
		pubLn.Close()
		admLn.Close()
		return err
	}
	warnPlainSecrets(cfg, logger)
	go resealAtStart(wctx, d, logger)
	go d.guard.run(wctx)
	if d.cursorKey != nil {
		go func() { _, _ = d.cursorKey.Keys(wctx) }() // read (or made) before the first list asks
	}
	down := watchDependencies(wctx, logger, d.dependencies(cfg), defaultWatch)
	return serveOn(ctx, cfg, d, logger, pubLn, admLn, func(pub, adm net.Addr) {
		logger.Info("gateway listening", "public", pub.String(), "admin", adm.String(), "version", versionString(),
			"tracing", tel.describe, "gc", gc, "cursors", cursorKeying(cfg), "unavailable", down)
	})
}

// listen binds the public and the admin listener.
func listen(cfg config.Config) (pub, adm net.Listener, err error) {
	if pub, err = net.Listen("tcp", cfg.Addr); err != nil {
		return nil, nil, fmt.Errorf("setting %s: %w", config.SettingName("Addr"), err)
	}
	if adm, err = net.Listen("tcp", cfg.AdminAddr); err != nil {
		pub.Close()
		return nil, nil, fmt.Errorf("setting %s: %w", config.SettingName("AdminAddr"), err)
	}
	return pub, adm, nil
}

// serveOn runs the public and admin listeners until SIGINT/SIGTERM or ctx
// ends, then drains: readiness turns false first and the listeners keep
// serving for DrainDelay (so load balancers notice and stop sending), then
// they stop accepting and requests in flight finish within ShutdownTimeout.
// A second signal ends the process at once.
func serveOn(ctx context.Context, cfg config.Config, d *deps, logger *slog.Logger, pubLn, admLn net.Listener, ready func(pub, adm net.Addr)) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	warnAdminAddr(logger, admLn.Addr())
	newServer := func(h http.Handler) web.HTTPServer {
		// The defaults: 5s to send the request head, 16 KiB of headers.
		return web.NewHTTPServer(h, web.HTTPConfig{ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)})
	}
	pub, adm := newServer(d.server.Handler()), newServer(d.adminHandler())
	errc := make(chan error, 2)
	go func() { errc <- pub.Serve(pubLn) }()
	go func() { errc <- adm.Serve(admLn) }()
	// Events are detected and delivered beside the listeners until the
	// listeners have stopped; deliveries under way then finish (within the
	// delivery timeout), and what was not delivered waits in Redis for any
	// instance.
	ectx, stopEvents := context.WithCancel(context.WithoutCancel(ctx))
	eventsDone := make(chan struct{})
	if cfg.EventsRun && d.events != nil {
		go func() { defer close(eventsDone); d.events.Run(ectx) }()
	} else {
		close(eventsDone)
	}
	defer func() { stopEvents(); <-eventsDone }()
	// The traffic's shape is recorded beside them too, and written a last
	// time once they have stopped (the deferred calls run after the
	// listeners' shutdown).
	shapeDone := make(chan struct{})
	go func() { defer close(shapeDone); d.shape.Run(ectx, d.limiter) }()
	defer func() { stopEvents(); <-shapeDone }()
	if d.audit != nil { // partitions ahead, retention behind
		auditDone := make(chan struct{})
		go func() { defer close(auditDone); maintainAudit(ectx, d, logger) }()
		defer func() { stopEvents(); <-auditDone }()
	}
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
	err := errors.Join(pub.Shutdown(sctx), adm.Shutdown(sctx))
	if err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	logger.Info("stopped")
	return nil
}

// redisLog is where the binary sends go-redis's own lines (main installs
// redisLogger): into the gateway's JSON log at debug level, since the
// dependency watcher reports Redis going down and coming back, once each,
// with the cause. Unset (tests running commands in-process), they go nowhere.
var redisLog atomic.Pointer[slog.Logger]

// redisLogger is go-redis's logging interface over redisLog.
type redisLogger struct{}

func (redisLogger) Printf(ctx context.Context, format string, v ...any) {
	if l := redisLog.Load(); l != nil {
		l.DebugContext(ctx, "redis client", "message", fmt.Sprintf(format, v...))
	}
}
