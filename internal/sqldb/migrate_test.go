package sqldb

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
)

// shop is a track of two migrations; the second creates a table without
// IF NOT EXISTS, so that applying it twice fails.
func shop() Track {
	return Track{Name: "shop", Migrations: []Migration{
		{Version: 1, Name: "items", Postgres: "CREATE TABLE items (id bigint PRIMARY KEY, name text NOT NULL)",
			SQLite: "CREATE TABLE items (id INTEGER PRIMARY KEY, name text NOT NULL)"},
		{Version: 2, Name: "prices", Postgres: "CREATE TABLE prices (id bigint PRIMARY KEY, cents bigint NOT NULL); CREATE INDEX prices_cents ON prices (cents)",
			SQLite: "CREATE TABLE prices (id INTEGER PRIMARY KEY, cents bigint NOT NULL); CREATE INDEX prices_cents ON prices (cents)"},
	}}
}

func tableExists(t *testing.T, db *DB, name string) bool {
	t.Helper()
	q := "SELECT count(*) FROM pg_tables WHERE tablename = $1"
	if db.Engine() == SQLite {
		q = "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = $1"
	}
	var n int64
	if err := QueryRow(context.Background(), db.Read(), q, []any{name}, &n); err != nil {
		t.Fatal(err)
	}
	return n > 0
}

func TestMigrationsFromEmptyAndAgain(t *testing.T) {
	t.Parallel()
	engines(t, func(t *testing.T, db *DB) {
		ctx := context.Background()
		other := Track{Name: "other", Migrations: []Migration{{Version: 1, Name: "notes", Postgres: "CREATE TABLE notes (a text)", SQLite: "CREATE TABLE notes (a text)"}}}
		pending, err := db.Check(ctx, shop(), other)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(pending) != "[shop 1 (items) shop 2 (prices) other 1 (notes)]" {
			t.Errorf("pending on an empty database: %v", pending)
		}
		done, err := db.Apply(ctx, shop(), other)
		if err != nil {
			t.Fatal(err)
		}
		if len(done) != 3 || !tableExists(t, db, "prices") || !tableExists(t, db, "notes") {
			t.Fatalf("applied %v; the tables: prices %v, notes %v", done, tableExists(t, db, "prices"), tableExists(t, db, "notes"))
		}
		// Again: nothing to do, nothing pending.
		if done, err := db.Apply(ctx, shop(), other); err != nil || len(done) != 0 {
			t.Errorf("applying again: %v, %v; want nothing applied", done, err)
		}
		if pending, err := db.Check(ctx, shop(), other); err != nil || len(pending) != 0 {
			t.Errorf("pending after Apply: %v, %v", pending, err)
		}
		// A binary with a third migration applies only it.
		next := shop()
		next.Migrations = append(next.Migrations, Migration{Version: 3, Name: "stock", Postgres: "ALTER TABLE items ADD COLUMN stock bigint NOT NULL DEFAULT 0",
			SQLite: "ALTER TABLE items ADD COLUMN stock bigint NOT NULL DEFAULT 0"})
		if done, err := db.Apply(ctx, next); err != nil || fmt.Sprint(done) != "[shop 3 (stock)]" {
			t.Errorf("applying a newer binary's track: %v, %v", done, err)
		}
		// The older binary is refused now: the database is ahead of it.
		if _, err := db.Check(ctx, shop()); !errors.Is(err, ErrAhead) {
			t.Errorf("Check by an older binary: %v, want ErrAhead", err)
		}
		if _, err := db.Apply(ctx, shop()); !errors.Is(err, ErrAhead) {
			t.Errorf("Apply by an older binary: %v, want ErrAhead", err)
		}
	})
}

func TestMigrationsRefuseAChangedMigration(t *testing.T) {
	t.Parallel()
	engines(t, func(t *testing.T, db *DB) {
		ctx := context.Background()
		first := shop()
		first.Migrations = first.Migrations[:1]
		if _, err := db.Apply(ctx, first); err != nil {
			t.Fatal(err)
		}
		// Version 1 edited after it was applied, and a version 2 to come:
		// refused, and version 2 is not applied.
		changed := shop()
		changed.Migrations[0].Postgres += " -- edited"
		changed.Migrations[0].SQLite += " -- edited"
		if _, err := db.Check(ctx, changed); !errors.Is(err, ErrChanged) {
			t.Errorf("Check of an edited migration: %v, want ErrChanged", err)
		}
		if _, err := db.Apply(ctx, changed); !errors.Is(err, ErrChanged) {
			t.Errorf("Apply of an edited migration: %v, want ErrChanged", err)
		}
		if tableExists(t, db, "prices") {
			t.Error("a refused Apply applied the next migration")
		}
	})
}

func TestMigrationThatFailsLeavesNothing(t *testing.T) {
	t.Parallel()
	engines(t, func(t *testing.T, db *DB) {
		ctx := context.Background()
		bad := shop()
		bad.Migrations[1].Postgres = "CREATE TABLE prices (id bigint); SELECT no_such_function()"
		bad.Migrations[1].SQLite = "CREATE TABLE prices (id bigint); INSERT INTO no_such_table VALUES (1)"
		done, err := db.Apply(ctx, bad)
		if err == nil || len(done) != 1 {
			t.Fatalf("Apply of a failing migration: %v, %v; want version 1 applied and an error", done, err)
		}
		if tableExists(t, db, "prices") {
			t.Error("the failed migration's first statement stayed")
		}
		if pending, err := db.Check(ctx, shop()); err != nil || fmt.Sprint(pending) != "[shop 2 (prices)]" {
			t.Errorf("pending after the failure: %v, %v", pending, err)
		}
	})
}

func TestMigrationsAppliedOnceByInstancesTogether(t *testing.T) {
	t.Parallel()
	engines(t, func(t *testing.T, db *DB) {
		ctx := context.Background()
		// Instances of their own: separate pools on the one database.
		url := db.where
		if db.Engine() == Postgres {
			url = db.pg.Config().ConnString()
		}
		var wg sync.WaitGroup
		errs := make([]error, 4)
		applied := make([]int, 4)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				other, err := Open(ctx, Config{URL: url})
				if err != nil {
					errs[i] = err
					return
				}
				defer other.Close()
				done, err := other.Apply(ctx, shop())
				errs[i], applied[i] = err, len(done)
			}()
		}
		wg.Wait()
		total := 0
		for i, err := range errs {
			if err != nil {
				t.Errorf("instance %d: %v", i, err)
			}
			total += applied[i]
		}
		var n int64
		if err := QueryRow(ctx, db.Read(), "SELECT count(*) FROM schema_migrations WHERE track = 'shop'", nil, &n); err != nil {
			t.Fatal(err)
		}
		if total != 2 || n != 2 {
			t.Errorf("instances applied %d migrations in all, %d recorded; want each of the 2 once", total, n)
		}
	})
}

func TestTracksMustBeInOrder(t *testing.T) {
	t.Parallel()
	db := openTestSQLite(t)
	for _, tr := range []Track{
		{Name: "", Migrations: shop().Migrations},
		{Name: "gap", Migrations: []Migration{{Version: 1, Name: "a"}, {Version: 3, Name: "c"}}},
		{Name: "unnamed", Migrations: []Migration{{Version: 1}}},
	} {
		if _, err := db.Apply(context.Background(), tr); err == nil {
			t.Errorf("track %+v was accepted", tr)
		}
	}
}
