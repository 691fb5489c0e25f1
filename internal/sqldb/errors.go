package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/puddle/v2"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// Unavailable reports whether err means "the database cannot serve now"
// (unreachable, restarting, out of connections, a statement or lock
// timeout, a file locked or full) rather than "this statement is wrong":
// the caller answers the first with a retry later, the second is a fault.
func Unavailable(err error) bool {
	if err == nil {
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case len(pgErr.Code) != 5:
			return false
		case pgErr.Code[:2] == "08", // connection exception
			pgErr.Code[:2] == "53", // insufficient resources
			pgErr.Code[:2] == "57", // operator intervention: statement_timeout, shutdown
			pgErr.Code == "55P03",  // lock_not_available: lock_timeout
			pgErr.Code == "40001",  // serialization failure
			pgErr.Code == "40P01",  // deadlock detected
			pgErr.Code == "3D000":  // database does not exist (dropped)
			return true
		}
		return false
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_CANTOPEN,
			sqlite3.SQLITE_IOERR, sqlite3.SQLITE_FULL, sqlite3.SQLITE_INTERRUPT,
			sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_READONLY:
			return true
		}
		return false
	}
	var connErr *pgconn.ConnectError
	var netErr net.Error
	switch {
	case errors.As(err, &connErr), errors.As(err, &netErr),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled),
		errors.Is(err, puddle.ErrClosedPool), errors.Is(err, sql.ErrConnDone),
		pgconn.Timeout(err), pgconn.SafeToRetry(err):
		return true
	}
	return strings.Contains(err.Error(), "sql: database is closed") || errors.Is(err, pgx.ErrTxClosed)
}

// Code is err's PostgreSQL SQLSTATE ("" when it has none).
func Code(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	return ""
}

// NoPartition reports whether err is PostgreSQL's refusal of a row that no
// partition of its table takes (its partitions were not made far enough
// ahead): the caller makes them and tries again.
func NoPartition(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23514" && strings.HasPrefix(pgErr.Message, "no partition of relation")
}
