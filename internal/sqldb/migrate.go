package sqldb

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"
)

// Migrations: each owner of tables registers a Track, its ordered list of
// migrations, and the database records which it applied, with a checksum
// of each, in schema_migrations(track, version, name, applied_at,
// checksum). Apply runs the missing ones, each in a transaction of its own,
// under a lock (pg_advisory_xact_lock on PostgreSQL, the write lock on
// SQLite), so that instances started together apply each once. A database
// that is ahead of the binary (a version the binary does not know) or
// whose applied migration differs from the binary's (its checksum) is
// refused, by Check as by Apply, before anything is changed: a binary
// older than its database, or a migration edited after it shipped, must
// not run against it.

// Migration is one step of a track's schema: its SQL for each engine (the
// text may hold several statements; one left empty does nothing on that
// engine, when a step concerns the other only).
type Migration struct {
	Version  int    // 1, 2, 3… in order, none skipped
	Name     string // what it does, for operators ("feed tables")
	Postgres string
	SQLite   string
}

// Track is an owner's migrations, under a name of its own ("history").
type Track struct {
	Name       string
	Migrations []Migration
}

// Step names one migration of a track, as Check and Apply report them.
type Step struct {
	Track   string
	Version int
	Name    string
}

func (s Step) String() string { return fmt.Sprintf("%s %d (%s)", s.Track, s.Version, s.Name) }

// The refusals of Check and Apply.
var (
	// ErrAhead: the database holds a migration this binary does not know.
	ErrAhead = errors.New("sqldb: the database's schema is newer than this binary")
	// ErrChanged: a migration applied differs from this binary's.
	ErrChanged = errors.New("sqldb: a migration applied to the database differs from this binary's")
)

// migrationsLock is the advisory lock key of Apply on PostgreSQL.
const migrationsLock = 0x67775f6d6967 // "gw_mig"

func (m Migration) sql(e Engine) string {
	if e == Postgres {
		return m.Postgres
	}
	return m.SQLite
}

func checksum(sql string) string {
	h := sha256.Sum256([]byte(sql))
	return hex.EncodeToString(h[:])
}

func (t Track) validate() error {
	if t.Name == "" {
		return errors.New("sqldb: a track needs a name")
	}
	for i, m := range t.Migrations {
		if m.Version != i+1 || m.Name == "" {
			return fmt.Errorf("sqldb: track %s: migration %d must have version %d and a name", t.Name, i+1, i+1)
		}
	}
	return nil
}

// applied is a migration the database recorded.
type applied struct {
	version  int
	checksum string
}

// Check reports the migrations of tracks the database has not applied, in
// the order Apply would apply them; ErrAhead or ErrChanged (wrapped, with
// the track and version) when the database must not be used by this binary.
func (db *DB) Check(ctx context.Context, tracks ...Track) ([]Step, error) {
	var pending []Step
	for _, t := range tracks {
		if err := t.validate(); err != nil {
			return nil, err
		}
		got, err := db.appliedOf(ctx, db.Read(), t.Name)
		if err != nil {
			return nil, err
		}
		if err := verify(db.engine, t, got); err != nil {
			return nil, err
		}
		for _, m := range t.Migrations[len(got):] {
			pending = append(pending, Step{t.Name, m.Version, m.Name})
		}
	}
	return pending, nil
}

// Apply applies the migrations of tracks the database has not applied, and
// reports those it applied (none when another instance was first). It
// refuses, changing nothing, a database Check refuses.
func (db *DB) Apply(ctx context.Context, tracks ...Track) ([]Step, error) {
	if _, err := db.Check(ctx, tracks...); err != nil {
		return nil, err
	}
	var done []Step
	for _, t := range tracks {
		for _, m := range t.Migrations {
			ok, err := db.applyOne(ctx, t, m)
			if err != nil {
				return done, fmt.Errorf("sqldb: migration %s: %w", Step{t.Name, m.Version, m.Name}, err)
			}
			if ok {
				done = append(done, Step{t.Name, m.Version, m.Name})
			}
		}
	}
	return done, nil
}

// applyOne applies m in a transaction of its own, under the lock, unless
// the database has it already; ok reports whether it did.
func (db *DB) applyOne(ctx context.Context, t Track, m Migration) (ok bool, err error) {
	err = db.Tx(ctx, func(q Querier) error {
		if db.engine == Postgres {
			// Held to the transaction's end: instances starting together
			// apply one after the other, and the second finds it done.
			if _, err := q.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", int64(migrationsLock)); err != nil {
				return err
			}
		}
		if _, err := q.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
  track text NOT NULL, version integer NOT NULL, name text NOT NULL,
  applied_at bigint NOT NULL, checksum text NOT NULL,
  PRIMARY KEY (track, version))`); err != nil {
			return err
		}
		got, err := db.appliedOf(ctx, q, t.Name)
		if err != nil {
			return err
		}
		if err := verify(db.engine, t, got); err != nil {
			return err
		}
		if len(got) >= m.Version {
			return nil
		}
		if s := m.sql(db.engine); s != "" {
			if _, err := q.Exec(ctx, s); err != nil {
				return err
			}
		}
		ok = true
		_, err = q.Exec(ctx, "INSERT INTO schema_migrations (track, version, name, applied_at, checksum) VALUES ($1, $2, $3, $4, $5)",
			t.Name, m.Version, m.Name, time.Now().UnixMilli(), checksum(m.sql(db.engine)))
		return err
	})
	return ok && err == nil, err
}

// verify refuses applied migrations t does not have, or has otherwise;
// the ones applied must be t's first ones, in order.
func verify(e Engine, t Track, got []applied) error {
	for i, a := range got {
		if a.version != i+1 {
			return fmt.Errorf("%w: track %s has version %d applied without version %d", ErrChanged, t.Name, a.version, i+1)
		}
		if i >= len(t.Migrations) {
			return fmt.Errorf("%w: track %s is at version %d, this binary knows up to %d: run a binary of that version or later",
				ErrAhead, t.Name, got[len(got)-1].version, len(t.Migrations))
		}
		if want := checksum(t.Migrations[i].sql(e)); a.checksum != want {
			return fmt.Errorf("%w: track %s version %d (%s) was applied with checksum %.12s…, this binary's is %.12s…",
				ErrChanged, t.Name, a.version, t.Migrations[i].Name, a.checksum, want)
		}
	}
	return nil
}

// appliedOf reads a track's applied migrations, by version; none when the
// table does not exist yet.
func (db *DB) appliedOf(ctx context.Context, q Querier, track string) ([]applied, error) {
	exists := "SELECT count(*) FROM pg_catalog.pg_tables WHERE tablename = 'schema_migrations' AND schemaname = current_schema()"
	if db.engine == SQLite {
		exists = "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'schema_migrations'"
	}
	var n int64
	if err := QueryRow(ctx, q, exists, nil, &n); err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, nil
	}
	rows, err := q.Query(ctx, "SELECT version, checksum FROM schema_migrations WHERE track = $1 ORDER BY version", track)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []applied
	for rows.Next() {
		var a applied
		var v int64
		if err := rows.Scan(&v, &a.checksum); err != nil {
			return nil, err
		}
		a.version = int(v)
		out = append(out, a)
	}
	return out, rows.Err()
}
