package main

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/invoicing-ao/gateway/audit"
	"github.com/invoicing-ao/gateway/cmd/gateway/internal/config"
	"github.com/invoicing-ao/gateway/events/history"
	"github.com/invoicing-ao/gateway/internal/sqldb"
)

// The gateway's own database (historyDatabaseURL): the audit log's tables,
// and the events' history's. Every command that opens it brings its schema
// up to date first: every track, each migration in a transaction of its
// own under sqldb's lock, so that instances started together apply each
// once. A database ahead of this binary (a migration it does not know), or
// whose applied migration differs from this binary's, is refused before
// anything is changed, naming the setting, the database and what to do.
// serve starts with the database down: it opens it lazily, serves the API,
// and applies the migrations once the database answers (watchHistory);
// until then the audit log answers 503 audit_unavailable and admin changes
// are refused before anything changes.

// historyTracks are the migrations of every owner of tables there.
func historyTracks() []sqldb.Track {
	return []sqldb.Track{audit.Migrations(), history.Migrations()}
}

// historyWhat names the database in messages and logs.
const historyWhat = "the gateway's database"

// historyDB is the gateway's database as the binary holds it: opened once
// (DB, which the audit log and the events' history share), and whether
// its schema is known to be this binary's (Ready).
type historyDB struct {
	DB      *sqldb.DB
	setting string // config.SettingName("HistoryDatabaseURL")
	target  string // its URL, password hidden
	// state is why DB may not be used yet (nil once migrated).
	state atomic.Pointer[error]
}

// errNotMigrated: serve has not applied the migrations yet.
var errNotMigrated = errors.New("the gateway's database has not answered since this instance started; its migrations are applied once it does")

// openHistory opens the database of historyDatabaseURL; lazy, one that
// cannot be reached yet is opened all the same (serve). The pool is
// databaseMaxConns, as the platform's databases'.
func openHistory(ctx context.Context, cfg config.Config, lazy bool) (*historyDB, error) {
	h := &historyDB{setting: config.SettingName("HistoryDatabaseURL"), target: config.RedactURL(cfg.HistoryDatabaseURL)}
	db, err := sqldb.Open(ctx, sqldb.Config{URL: cfg.HistoryDatabaseURL, MaxConns: cfg.DatabaseMaxConns, Lazy: lazy})
	if err != nil {
		return nil, h.fail(err)
	}
	h.DB = db
	notYet := errNotMigrated
	h.state.Store(&notYet)
	return h, nil
}

// Ready is nil once the database's schema is this binary's: the audit
// log's (audit.Config.Ready), and the events' history's.
func (h *historyDB) Ready() error {
	if err := h.state.Load(); err != nil {
		return *err
	}
	return nil
}

// Ping is what /readyz and the dependency watcher ask: the database
// answers and its schema is this binary's.
func (h *historyDB) Ping(ctx context.Context) error {
	if err := h.DB.Ping(ctx); err != nil {
		return err
	}
	return h.Ready()
}

// migrate applies the migrations this database lacks; once they are
// applied (or were), the database is Ready.
func (h *historyDB) migrate(ctx context.Context) ([]sqldb.Step, error) {
	done, err := h.DB.Apply(ctx, historyTracks()...)
	if err != nil {
		if refusedSchema(err) {
			h.state.Store(&err)
		}
		return done, h.fail(err)
	}
	h.state.Store(nil)
	return done, nil
}

// refusedSchema reports whether err is a database this binary must not use.
func refusedSchema(err error) bool {
	return errors.Is(err, sqldb.ErrAhead) || errors.Is(err, sqldb.ErrChanged)
}

// fail is err as the command line and the log tell it: the database, its
// setting and address, the cause, and the next step.
func (h *historyDB) fail(err error) error {
	return &depError{what: historyWhat, setting: h.setting, target: h.target, err: err, next: historyHint(err, h.target), said: sqldbCause(err)}
}

// sqldbCause is what the database or sqldb's checks said, without
// sqldb's prefix and its own naming of the database (the message names it
// by its setting already).
func sqldbCause(err error) string {
	s := strings.TrimPrefix(cause(err), "sqldb: ")
	for _, scheme := range []string{"postgres://", "postgresql://", "sqlite:"} {
		if strings.HasPrefix(s, scheme) {
			if _, rest, ok := strings.Cut(s, ": "); ok {
				s = rest
			}
		}
	}
	return strings.TrimPrefix(s, "sqldb: ")
}

// historyHint is the next step for a failure of the gateway's database
// ("" for hint's).
func historyHint(err error, target string) string {
	switch {
	case errors.Is(err, sqldb.ErrAhead):
		return "this binary is older than the database's schema: run the release that migrated it, or a later one; never an earlier one against it"
	case errors.Is(err, sqldb.ErrChanged):
		return "a migration this binary ships differs from the one the database applied: run the release that applied it " +
			"(a build with an edited migration must not run against this database), or restore the database from its backup"
	case sqldb.Code(err) == "3D000":
		return "create it: " + createdb(target) + "; its tables are made by the first command that opens it (gateway serve, gateway history migrate)"
	}
	return ""
}

// Close closes the database.
func (h *historyDB) Close() {
	if h != nil && h.DB != nil {
		h.DB.Close()
	}
}

// historyEffect is what is answered while the database is down, for the
// start-up warning.
const historyEffect = "the audit log answers 503 audit_unavailable, and changes of keys, limits and webhook endpoints are refused with it " +
	"before anything changes; the API is served"

// watchHistory brings serve's database up to date: at once when it
// answers within first, else once it does (tried every second; the
// dependency watcher says it is down, and back). A
// database refused (ahead of this binary, or migrated otherwise) at start
// fails serve; one refused later is logged at error level and kept
// unready. Once migrated, the audit log's streams of the earlier layout
// are copied from Redis (upgradeAudit).
func watchHistory(ctx context.Context, d *deps, logger *slog.Logger, first time.Duration) error {
	h := d.history
	try := func() (bool, error) {
		// Asked within first, so that a database down does not hold the
		// start; migrated without that bound once it answers.
		pctx, cancel := context.WithTimeout(ctx, first)
		err := h.DB.Ping(pctx)
		cancel()
		if err != nil {
			return false, err
		}
		done, err := h.migrate(ctx)
		if err == nil {
			logMigrated(logger, h, done)
			go upgradeAudit(ctx, d, logger)
		}
		return err == nil, err
	}
	ok, err := try()
	if refusedSchema(err) {
		return err
	}
	if ok {
		return nil
	}
	// Said by the dependency watcher, which asks h.Ping: down until migrated.
	go func() {
		for ctx.Err() == nil {
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
			ok, err := try()
			switch {
			case ok:
				return
			case refusedSchema(err):
				logger.Error("the gateway's database is refused: the audit log stays unavailable", "setting", h.setting, "target", h.target, "error", err.Error())
				return
			}
		}
	}()
	return nil
}

// logMigrated says what migrations were applied, if any.
func logMigrated(logger *slog.Logger, h *historyDB, done []sqldb.Step) {
	if len(done) == 0 {
		return
	}
	steps := make([]string, len(done))
	for i, s := range done {
		steps[i] = s.String()
	}
	logger.Info("gateway database migrated", "target", h.target, "applied", steps)
}

// upgradeAudit copies the audit log's streams of the earlier layout from
// Redis into the database, and deletes them from Redis; with Redis down it
// tries again every few seconds until it is done. Several instances may do
// it at once (audit.Log.UpgradeFromRedis).
func upgradeAudit(ctx context.Context, d *deps, logger *slog.Logger) {
	for wait := time.Duration(0); ; wait = 5 * time.Second {
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		u, err := d.audit.UpgradeFromRedis(ctx, d.rdb, auditStreamsPrefix(d.cfg))
		if err != nil {
			logger.Debug("audit log: the copy from Redis waits", "error", err.Error())
			continue
		}
		logUpgraded(logger, u)
		return
	}
}

// auditStreamsPrefix is where the earlier layout kept the audit log.
func auditStreamsPrefix(cfg config.Config) string { return cfg.RedisPrefix + "audit:" }

func logUpgraded(logger *slog.Logger, u audit.Upgraded) {
	if u.Streams == 0 {
		return
	}
	args := []any{"companies", u.Streams, "copied", u.Copied, "present", u.Present, "expired", u.Expired}
	if u.Kept > 0 {
		logger.Warn("audit log: entries left in Redis, which the log would not have made (a field it does not know, or a secret's shape)",
			append(args, "kept", u.Kept)...)
		return
	}
	logger.Info("audit log copied from Redis into the gateway's database, and deleted from Redis", args...)
}

// maintainAudit makes the audit log's partitions ahead and drops (or
// deletes) what is past its retention, at start and then hourly, once the
// database is ready; an error is logged and tried again the next hour.
func maintainAudit(ctx context.Context, d *deps, logger *slog.Logger) {
	for wait := time.Duration(0); ; {
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		if d.history.Ready() != nil {
			wait = time.Minute // not migrated yet
			continue
		}
		if _, err := d.audit.Maintain(ctx); err != nil && ctx.Err() == nil {
			logger.Warn("audit log: maintenance failed; tried again in an hour", "error", err.Error())
		}
		wait = time.Hour
	}
}

// noAuditLog is the audit log of a command that does not open the
// gateway's database: every record is refused, so that a change made by
// a command that should have opened it fails rather than goes unrecorded.
type noAuditLog struct{}

var errNoAuditLog = errors.New("this command does not open the gateway's database, so it cannot record the audit log (a mistake of ours: report it)")

func (noAuditLog) Record(context.Context, audit.Entry) (audit.Event, error) {
	return audit.Event{}, errNoAuditLog
}

func (noAuditLog) Read(context.Context, string, time.Time, int) ([]audit.Event, time.Time, error) {
	return nil, time.Time{}, errNoAuditLog
}

func (noAuditLog) Ready(context.Context) error { return errNoAuditLog }
