package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/redis/go-redis/v9"

	"github.com/invoicing-ao/gateway/authz"
	"github.com/invoicing-ao/gateway/cmd/gateway/internal/config"
)

// depError is a dependency that failed: what it is, the setting that names
// it, where it is (password hidden), and what it said itself. The command
// line prints it as is: an operator needs "database "invoicing_live" does
// not exist", not the API's "The database is unavailable; retry later."
type depError struct {
	what, setting, target string
	err                   error
	next                  string // the next step; "": hint's
	said                  string // what the dependency said; "": cause's
}

func (e *depError) Error() string {
	said := e.said
	if said == "" {
		said = cause(e.err)
	}
	msg := fmt.Sprintf("%s (setting %s = %s): %s", e.what, e.setting, e.target, said)
	h := e.next
	if h == "" {
		h = hint(e.err, e.target)
	}
	if h != "" {
		msg += "\n(" + h + ")"
	}
	return msg
}

func (e *depError) Unwrap() error { return e.err }

// cause is what the driver or the network said, without the wrapping of our
// packages ("backend: database unavailable: ping: ..."): they join their
// sentinel and the cause (fmt.Errorf("%w: %s: %w")), the cause last.
func cause(err error) string {
	for {
		u, ok := err.(interface{ Unwrap() []error })
		if !ok {
			return err.Error()
		}
		errs := u.Unwrap()
		if len(errs) == 0 {
			return err.Error()
		}
		err = errs[len(errs)-1]
	}
}

// hint is the next step for a failure an operator meets setting up, or "".
func hint(err error, target string) string {
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		switch pg.Code {
		case "3D000":
			return "create it: " + createdb(target) + ", then load the schema: gateway data schema"
		case "42P01":
			return "load the schema first: gateway data schema"
		case "42P07":
			return "the schema is loaded already"
		case "23505":
			return "the data is loaded already"
		case "28000", "28P01":
			return "check the user and password in the URL"
		}
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		return "nothing listens there: is the server running, on that host and port?"
	}
	var re redis.Error
	if errors.As(err, &re) && strings.HasPrefix(re.Error(), "OOM ") {
		return "Redis is full: its memory is at maxmemory, and with maxmemory-policy noeviction it refuses writes rather than delete data; " +
			"give it room (raise maxmemory, or free memory), then repeat the command"
	}
	return ""
}

// createdb is the command that creates the database of a postgres:// URL
// (a host in the URL or as ?host=, a socket directory or a name).
func createdb(target string) string {
	u, err := url.Parse(target)
	if err != nil || strings.Trim(u.Path, "/") == "" {
		return "createdb NAME"
	}
	args := []string{"createdb"}
	host := u.Hostname()
	if host == "" {
		host = u.Query().Get("host")
	}
	if host != "" {
		args = append(args, "-h", host)
	}
	if u.Port() != "" {
		args = append(args, "-p", u.Port())
	}
	if u.User != nil && u.User.Username() != "" {
		args = append(args, "-U", u.User.Username())
	}
	return strings.Join(append(args, strings.TrimPrefix(u.Path, "/")), " ")
}

// dependency is one thing `serve` talks to, watched while it runs.
type dependency struct {
	name    string // "Redis", "live database", "sandbox database", "gateway database"
	setting string // its setting, as settingName says it
	target  string // its URL, password hidden
	effect  string // what is answered while it is down
	ping    func(ctx context.Context) error
}

// dependencies are the ones d talks to.
func (d *deps) dependencies(cfg config.Config) []dependency {
	all := []dependency{
		{"Redis", config.SettingName("RedisURL"), config.RedactURL(cfg.RedisURL),
			"keys not verified in the last " + cmp.Or(cfg.KeyStaleTTL, authz.DefaultStaleTTL).String() + " get 503 authentication_unavailable; rate limits are decided per instance",
			d.keys.Ping},
		{"live database", config.SettingName("LiveDatabaseURL"), config.RedactURL(cfg.LiveDatabaseURL),
			"LIVE keys get 503 database_unavailable; TEST keys are served", d.live.Ping},
		{"sandbox database", config.SettingName("TestDatabaseURL"), config.RedactURL(cfg.TestDatabaseURL),
			"TEST keys get 503 database_unavailable; LIVE keys are served", d.test.Ping},
	}
	if d.history != nil {
		all = append(all, dependency{"gateway database", d.history.setting, d.history.target, historyEffect, d.history.Ping})
	}
	return all
}

// watchConfig paces watchDependencies.
type watchConfig struct {
	first    time.Duration // bound of the checks at start
	downEach time.Duration // a dependency that is down is asked this often
	upEach   time.Duration // one that answers, this often
}

var defaultWatch = watchConfig{first: 3 * time.Second, downEach: time.Second, upEach: 5 * time.Second}

// watchDependencies checks every dependency at once, logs a warning naming
// each that is down, with why and what is answered meanwhile, and returns
// their names; then, until ctx ends, it keeps asking each and logs when one
// goes down or comes back. It never stops the gateway: a dependency that is
// down is served as unavailable (breaker, 503) and recovers alone.
func watchDependencies(ctx context.Context, logger *slog.Logger, deps []dependency, wc watchConfig) (down []string) {
	up := make([]bool, len(deps))
	var wg sync.WaitGroup
	for i, dep := range deps {
		wg.Go(func() { up[i] = check(ctx, logger, dep, wc.first, false) })
	}
	wg.Wait()
	down = []string{} // logged as [] rather than null
	for i, dep := range deps {
		if !up[i] {
			down = append(down, dep.name)
		}
		go watch(ctx, logger, dep, up[i], wc)
	}
	return down
}

// watch asks dep every downEach or upEach and logs its changes.
func watch(ctx context.Context, logger *slog.Logger, dep dependency, up bool, wc watchConfig) {
	since := time.Now()
	for {
		wait := wc.upEach
		if !up {
			wait = wc.downEach
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		now := check(ctx, logger, dep, wc.first, !up)
		switch {
		case now && !up:
			logger.Info("dependency recovered", "dependency", dep.name, "downFor", time.Since(since).Round(time.Millisecond).String())
			since = time.Now()
		case !now && up:
			since = time.Now()
		}
		up = now
	}
}

// check pings dep; a failure is logged as a warning unless quiet (a
// dependency known to be down is not reported every second).
func check(ctx context.Context, logger *slog.Logger, dep dependency, timeout time.Duration, quiet bool) bool {
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err := dep.ping(cctx)
	if err == nil || ctx.Err() != nil {
		return err == nil
	}
	if !quiet {
		logger.Warn("dependency unavailable; serving without it until it answers", "dependency", dep.name,
			"setting", dep.setting, "target", dep.target, "error", cause(err), "effect", dep.effect)
	}
	return false
}
