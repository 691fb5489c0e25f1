// Package sqldb opens the gateway's own database, PostgreSQL in production
// and SQLite in the demo, and gives its owners what both engines need: one
// small query API over either, versioned migrations in named tracks, and
// time partitions (PostgreSQL) or bounded deletes (SQLite) for retention.
// It imports none of ours; each owner (the events' history, the audit log)
// keeps its own tables and migrations.
//
// PostgreSQL is reached through pgx's pool (pgxpool): binary encoding,
// cached statements, arrays and pipelined batches on the hot paths. SQLite
// through database/sql and modernc.org/sqlite, pure Go, so that the demo
// needs nothing installed: one writer connection (SQLite has one writer at
// a time; a pool of one queues them in Go instead of on the file's lock)
// and a few readers, in WAL mode so that readers never wait for the writer.
//
// The same SQL text serves both engines where it can: placeholders are
// $1, $2, … (modernc binds $N by position), integers are bigint (SQLite's
// INTEGER is 64 bits), bytes are bytea or BLOB, and NULLs are avoided
// (columns default to 0 or the empty string) so that scanning needs no
// engine's types.
package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	_ "modernc.org/sqlite" // the "sqlite" database/sql driver
)

// Engine names a database engine.
type Engine string

// The engines.
const (
	Postgres Engine = "postgres"
	SQLite   Engine = "sqlite"
)

// Config says which database to open and how.
type Config struct {
	// URL is postgres://… (or postgresql://…) for PostgreSQL, sqlite:PATH or
	// file:PATH for SQLite (the file is made when missing). Required.
	URL string
	// MaxConns bounds the PostgreSQL pool, or the SQLite readers (the
	// writer is always one connection). Zero: 8 for PostgreSQL, 4 for SQLite.
	MaxConns int
	// ConnectTimeout bounds a new connection. Zero: 5 s.
	ConnectTimeout time.Duration
	// StatementTimeout is PostgreSQL's statement_timeout, which stops a
	// runaway statement even when its client went away; and, for SQLite,
	// how long a writer waits for another process's lock (busy_timeout).
	// Zero: 30 s.
	StatementTimeout time.Duration
	// Lazy makes Open return the database without first asking it
	// (PostgreSQL): one that cannot be reached yet fails each statement
	// as unavailable (Unavailable) until it answers, and the pool connects
	// alone once it does. False: Open pings, and fails when it does not
	// answer. A server that must start during an outage sets it; a tool
	// that needs the database now leaves it off, to say at once what is
	// wrong.
	Lazy bool
}

func (c Config) withDefaults(e Engine) Config {
	if c.MaxConns <= 0 {
		c.MaxConns = 8
		if e == SQLite {
			c.MaxConns = 4
		}
	}
	if c.ConnectTimeout <= 0 {
		c.ConnectTimeout = 5 * time.Second
	}
	if c.StatementTimeout <= 0 {
		c.StatementTimeout = 30 * time.Second
	}
	return c
}

// DB is an open database of either engine.
type DB struct {
	engine Engine
	pg     *pgxpool.Pool
	w, r   *sql.DB      // SQLite: the one writer, the readers
	pgVer  atomic.Int64 // PostgreSQL's server_version_num; 0 until read
	where  string       // the URL without its credentials, for messages
}

// EngineOf is the engine a URL names; false when it names none.
func EngineOf(rawURL string) (Engine, bool) {
	switch {
	case strings.HasPrefix(rawURL, "postgres://"), strings.HasPrefix(rawURL, "postgresql://"):
		return Postgres, true
	case strings.HasPrefix(rawURL, "sqlite:"), strings.HasPrefix(rawURL, "file:"):
		return SQLite, true
	}
	return "", false
}

// Open opens the database cfg.URL names and checks that it answers.
func Open(ctx context.Context, cfg Config) (*DB, error) {
	e, ok := EngineOf(cfg.URL)
	if !ok {
		return nil, errors.New("sqldb: the database URL must start with postgres://, postgresql://, sqlite: or file: (then a path)")
	}
	cfg = cfg.withDefaults(e)
	if e == Postgres {
		return openPostgres(ctx, cfg)
	}
	return openSQLite(ctx, cfg)
}

func openPostgres(ctx context.Context, cfg Config) (*DB, error) {
	where := redact(cfg.URL)
	pc, err := pgxpool.ParseConfig(cfg.URL)
	if err != nil {
		// The parse error may quote the URL, password included.
		return nil, fmt.Errorf("sqldb: malformed PostgreSQL URL %s", where)
	}
	pc.MaxConns = int32(cfg.MaxConns)
	pc.ConnConfig.ConnectTimeout = cfg.ConnectTimeout
	pc.ConnConfig.RuntimeParams["statement_timeout"] = strconv.FormatInt(cfg.StatementTimeout.Milliseconds(), 10)
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("sqldb: %s: %w", where, err)
	}
	db := &DB{engine: Postgres, pg: pool, where: where}
	if cfg.Lazy {
		return db, nil // the version is read once the server answers
	}
	pctx, cancel := context.WithTimeout(ctx, cfg.ConnectTimeout)
	defer cancel()
	if _, err := db.version(pctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("sqldb: %s: %w", where, err)
	}
	return db, nil
}

// version is PostgreSQL's server_version_num, read from the server the
// first time it is asked.
func (db *DB) version(ctx context.Context) (int, error) {
	if v := db.pgVer.Load(); v != 0 {
		return int(v), nil
	}
	var ver string
	if err := db.pg.QueryRow(ctx, "SHOW server_version_num").Scan(&ver); err != nil {
		return 0, err
	}
	v, _ := strconv.Atoi(ver)
	db.pgVer.Store(int64(v))
	return v, nil
}

func openSQLite(ctx context.Context, cfg Config) (*DB, error) {
	path := strings.TrimPrefix(strings.TrimPrefix(cfg.URL, "sqlite:"), "file:")
	if path == "" || strings.ContainsAny(path, "?#") {
		return nil, errors.New("sqldb: a SQLite URL is sqlite:PATH or file:PATH, with no parameters")
	}
	if dir := filepath.Dir(path); dir != "" {
		if _, err := os.Stat(dir); err != nil {
			return nil, fmt.Errorf("sqldb: SQLite database %s: %w", path, err)
		}
	}
	// WAL: readers do not block the writer nor it them. NORMAL sync is
	// durable in WAL mode but for the last transactions on a power loss.
	// The writer takes the write lock when its transaction begins
	// (immediate), so that two writers never both read and then fail to
	// upgrade; a busy timeout makes another process's writer wait.
	base := path + "?_pragma=busy_timeout(" + strconv.FormatInt(cfg.StatementTimeout.Milliseconds(), 10) + ")" +
		"&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)"
	w, err := sql.Open("sqlite", base+"&_txlock=immediate")
	if err != nil {
		return nil, fmt.Errorf("sqldb: SQLite database %s: %w", path, err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxIdleTime(0)
	r, err := sql.Open("sqlite", base+"&_pragma=query_only(1)")
	if err != nil {
		_ = w.Close()
		return nil, fmt.Errorf("sqldb: SQLite database %s: %w", path, err)
	}
	r.SetMaxOpenConns(cfg.MaxConns)
	r.SetMaxIdleConns(cfg.MaxConns)
	db := &DB{engine: SQLite, w: w, r: r, where: "sqlite:" + path}
	// The writer first: it makes the file and turns WAL on.
	pctx, cancel := context.WithTimeout(ctx, cfg.ConnectTimeout)
	defer cancel()
	if err := db.Ping(pctx); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// redact is a URL without its password, for messages.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(malformed URL)"
	}
	if u.User != nil {
		u.User = url.User(u.User.Username())
	}
	u.RawQuery = ""
	return u.String()
}

// Engine is the database's engine.
func (db *DB) Engine() Engine { return db.engine }

// String names the database (its URL without credentials).
func (db *DB) String() string { return db.where }

// Pool is the PostgreSQL pool, for an owner's engine-specific paths; nil
// on SQLite.
func (db *DB) Pool() *pgxpool.Pool { return db.pg }

// Writer and Reader are SQLite's writer (one connection; its transactions
// begin immediate) and readers (read-only); nil on PostgreSQL.
func (db *DB) Writer() *sql.DB { return db.w }

// Reader: see Writer.
func (db *DB) Reader() *sql.DB { return db.r }

// ServerVersion is PostgreSQL's server_version_num (150004 for 15.4); 0 on
// SQLite, and on a Lazy database that has not answered yet.
func (db *DB) ServerVersion() int { return int(db.pgVer.Load()) }

// Ping checks that the database answers.
func (db *DB) Ping(ctx context.Context) error {
	var err error
	if db.engine == Postgres {
		if err = db.pg.Ping(ctx); err == nil {
			_, err = db.version(ctx) // a Lazy database's, once it answers
		}
	} else {
		// PingContext alone does not touch the file; reading the schema does.
		if _, err = db.w.ExecContext(ctx, "SELECT count(*) FROM sqlite_schema"); err == nil {
			_, err = db.r.ExecContext(ctx, "SELECT count(*) FROM sqlite_schema")
		}
	}
	if err != nil {
		return fmt.Errorf("sqldb: %s: %w", db.where, err)
	}
	return nil
}

// Close closes the database's connections.
func (db *DB) Close() {
	if db.pg != nil {
		db.pg.Close()
	}
	if db.w != nil {
		_ = db.w.Close()
		_ = db.r.Close()
	}
}

// Rows are a query's rows, of either engine.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close()
}

// Querier runs SQL on either engine: the pool or a reader outside a
// transaction, or a transaction's connection.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (Rows, error)
	// Exec runs a statement and reports the rows it changed. Without
	// arguments, the text may hold several statements.
	Exec(ctx context.Context, sql string, args ...any) (int64, error)
	Engine() Engine
}

// ErrNoRows is QueryRow's answer when the query found nothing.
var ErrNoRows = errors.New("sqldb: no rows")

// QueryRow scans the first row of a query into dest; ErrNoRows when there
// is none.
func QueryRow(ctx context.Context, q Querier, sql string, args []any, dest ...any) error {
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return err
		}
		return ErrNoRows
	}
	if err := rows.Scan(dest...); err != nil {
		return err
	}
	rows.Close()
	return rows.Err()
}

// Read is the querier for reads outside a transaction: the pool, or
// SQLite's readers.
func (db *DB) Read() Querier {
	if db.engine == Postgres {
		return pgQ{db.pg}
	}
	return sqlQ{db.r}
}

// Tx runs fn in a write transaction, committed when fn returns nil and
// rolled back otherwise. On SQLite it holds the write lock from its start.
func (db *DB) Tx(ctx context.Context, fn func(q Querier) error) error {
	if db.engine == Postgres {
		tx, err := db.pg.Begin(ctx)
		if err != nil {
			return err
		}
		defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
		if err := fn(pgQ{tx}); err != nil {
			return err
		}
		return tx.Commit(ctx)
	}
	tx, err := db.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	if err := fn(sqlQ{tx}); err != nil {
		return err
	}
	return tx.Commit()
}

// pgxQuerier is what pgQ needs of a pool or a transaction.
type pgxQuerier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// pgQ adapts a pgx pool or transaction.
type pgQ struct{ c pgxQuerier }

func (p pgQ) Engine() Engine { return Postgres }

func (p pgQ) Query(ctx context.Context, sql string, args ...any) (Rows, error) {
	return p.c.Query(ctx, sql, args...)
}

func (p pgQ) Exec(ctx context.Context, sql string, args ...any) (int64, error) {
	tag, err := p.c.Exec(ctx, sql, args...)
	return tag.RowsAffected(), err
}

// sqlConn is what sqlQ needs of a *sql.DB or *sql.Tx.
type sqlConn interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// sqlQ adapts database/sql.
type sqlQ struct{ c sqlConn }

func (s sqlQ) Engine() Engine { return SQLite }

func (s sqlQ) Query(ctx context.Context, q string, args ...any) (Rows, error) {
	rows, err := s.c.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	return sqlRows{rows}, nil
}

func (s sqlQ) Exec(ctx context.Context, q string, args ...any) (int64, error) {
	res, err := s.c.ExecContext(ctx, q, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

type sqlRows struct{ *sql.Rows }

func (r sqlRows) Close() { _ = r.Rows.Close() }
