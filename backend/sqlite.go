package backend

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

var sqliteDialect = &dialect{
	engine: "sqlite",
	rebind: func(q string) string { return q },
	// Decimals and dates are stored as text already (schema/sqlite.sql).
	dec:  func(col string) string { return col },
	date: func(col string) string { return col },
	json: func(col string) string { return col },
	// SQLite's lower() folds ASCII only; gw_lower is Go's, so "JOÃO" finds
	// "joão" as PostgreSQL's lower() does.
	nameLike: `gw_lower(c.name) LIKE ? ESCAPE '\'`,
	nifLike:  `upper(replace(c.nif, ' ', '')) LIKE ? ESCAPE '\'`,
	inIDs:    func(col string) string { return col + " IN (SELECT value FROM json_each(?))" },
	idsArg: func(ids []string) any {
		b, _ := json.Marshal(ids) // []string cannot fail
		return string(b)
	},
	ts:     func(t *time.Time) any { return sqliteTime{t} },
	tsNull: func(t **time.Time) any { return sqliteNullTime{t} },
	tsArg:  func(t time.Time) any { return formatSQLiteTime(t) },
	uuidP:  "?",
	tsP:    "?",
}

var registerLower = sync.OnceValue(func() error {
	return sqlite.RegisterDeterministicScalarFunction("gw_lower", 1,
		func(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
			switch v := args[0].(type) {
			case string:
				return strings.ToLower(v), nil
			case nil:
				return nil, nil
			default:
				return nil, fmt.Errorf("gw_lower: unexpected %T", v)
			}
		})
})

type sqliteDB struct{ db *sql.DB }

// sqliteDSN opens PATH with the settings concurrent creates need: WAL (readers
// do not block the writer), a busy timeout (writers queue instead of failing)
// and foreign keys (off by default in SQLite).
func sqliteDSN(path string, timeout time.Duration) string {
	return path + "?_pragma=busy_timeout(" + strconv.FormatInt(ceilMillis(timeout), 10) + ")" +
		"&_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)&_pragma=synchronous(NORMAL)"
}

func openSQLite(_ context.Context, cfg Config) (*sqliteDB, error) {
	path := strings.TrimPrefix(cfg.URL, "sqlite:")
	if path == "" || strings.ContainsRune(path, '?') {
		return nil, errors.New("backend: sqlite URL must be sqlite:PATH")
	}
	if err := registerLower(); err != nil {
		return nil, fmt.Errorf("backend: register sqlite function: %w", err)
	}
	db, err := sql.Open("sqlite", sqliteDSN(path, cfg.QueryTimeout))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	db.SetMaxOpenConns(cfg.MaxConns)
	db.SetMaxIdleConns(cfg.MaxConns)
	return &sqliteDB{db: db}, nil
}

type sqlRows struct{ *sql.Rows }

func (r sqlRows) Close() { _ = r.Rows.Close() }

func (s *sqliteDB) query(ctx context.Context, q string, args ...any) (rowIter, error) {
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	return sqlRows{rows}, nil
}

func (s *sqliteDB) exec(ctx context.Context, q string, args ...any) (int64, error) {
	res, err := s.db.ExecContext(ctx, q, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (s *sqliteDB) ping(ctx context.Context) error {
	// PingContext alone does not touch the file; reading the schema does.
	_, err := s.db.ExecContext(ctx, "SELECT count(*) FROM sqlite_schema")
	return err
}

func (s *sqliteDB) close() { _ = s.db.Close() }

func (s *sqliteDB) classify(err error) error {
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch code := se.Code(); {
		case code == sqlite3.SQLITE_CONSTRAINT_UNIQUE && strings.Contains(se.Error(), "customers.nif"):
			return ErrNIFConflict
		case (code == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY || code == sqlite3.SQLITE_CONSTRAINT_UNIQUE) &&
			strings.Contains(se.Error(), "customers.id"):
			return errIDTaken
		case code == sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY:
			return ErrNotFound // the company does not exist
		}
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_CANTOPEN,
			sqlite3.SQLITE_IOERR, sqlite3.SQLITE_FULL, sqlite3.SQLITE_INTERRUPT,
			sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_READONLY:
			return ErrUnavailable
		}
		return nil
	}
	if errors.Is(err, sql.ErrConnDone) || strings.Contains(err.Error(), "sql: database is closed") {
		return ErrUnavailable
	}
	return nil
}

// sqliteTime scans a stored timestamp text into a time.Time.
type sqliteTime struct{ t *time.Time }

func (s sqliteTime) Scan(src any) error {
	str, ok := textOf(src)
	if !ok {
		return fmt.Errorf("backend: timestamp column holds %T", src)
	}
	t, err := parseSQLiteTime(str)
	if err != nil {
		return err
	}
	*s.t = t
	return nil
}

// sqliteNullTime is sqliteTime for a nullable column.
type sqliteNullTime struct{ t **time.Time }

func (s sqliteNullTime) Scan(src any) error {
	if src == nil {
		*s.t = nil
		return nil
	}
	var t time.Time
	if err := (sqliteTime{&t}).Scan(src); err != nil {
		return err
	}
	*s.t = &t
	return nil
}

func textOf(src any) (string, bool) {
	switch v := src.(type) {
	case string:
		return v, true
	case []byte:
		return string(v), true
	}
	return "", false
}
