package sqldb

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/internal/testenv"
)

// openPostgres opens a database of this test's own on the tests' server.
func openTestPostgres(t *testing.T) *DB {
	t.Helper()
	db, err := Open(context.Background(), Config{URL: testenv.Postgres(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	return db
}

// openTestSQLite opens a SQLite database in the test's directory.
func openTestSQLite(t *testing.T) *DB {
	t.Helper()
	db, err := Open(context.Background(), Config{URL: "sqlite:" + filepath.Join(t.TempDir(), "gw.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	return db
}

// engines runs fn against a PostgreSQL and a SQLite database of its own.
func engines(t *testing.T, fn func(t *testing.T, db *DB)) {
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		fn(t, openTestPostgres(t))
	})
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		fn(t, openTestSQLite(t))
	})
}

func TestOpenRefusesWhatIsNotADatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, url := range []string{"", "mysql://x", "redis://127.0.0.1:6379", "sqlite:", "sqlite:/tmp/x.db?mode=ro", "file:/tmp/x#y"} {
		if db, err := Open(ctx, Config{URL: url}); err == nil {
			db.Close()
			t.Errorf("Open(%q) = nil error, want a refusal", url)
		}
	}
	_, err := Open(ctx, Config{URL: "sqlite:" + filepath.Join(t.TempDir(), "missing", "gw.db")})
	if err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("a SQLite file in a missing directory: %v, want an error naming it", err)
	}
	// A PostgreSQL that does not answer: the error never shows the password.
	_, err = Open(ctx, Config{URL: "postgres://gw:s3cr3t@127.0.0.1:" + testenv.ClosedPort(t) + "/x?sslmode=disable"})
	if err == nil || strings.Contains(err.Error(), "s3cr3t") || !Unavailable(err) {
		t.Errorf("a PostgreSQL that does not answer: %v, want an unavailable error without the password", err)
	}
	_, err = Open(ctx, Config{URL: "postgres://gw:s3cr3t@[::1:5432/x"})
	if err == nil || strings.Contains(err.Error(), "s3cr3t") {
		t.Errorf("a malformed PostgreSQL URL: %v, want an error without the password", err)
	}
}

func TestEngineOf(t *testing.T) {
	t.Parallel()
	for url, want := range map[string]Engine{"postgres://h/db": Postgres, "postgresql://h/db": Postgres, "sqlite:gw.db": SQLite, "file:/var/gw.db": SQLite} {
		if e, ok := EngineOf(url); !ok || e != want {
			t.Errorf("EngineOf(%q) = %q, %v; want %q", url, e, ok, want)
		}
	}
	if _, ok := EngineOf("mysql://h/db"); ok {
		t.Error("EngineOf(mysql://…) found an engine")
	}
}

func TestQuerierOnBothEngines(t *testing.T) {
	t.Parallel()
	engines(t, func(t *testing.T, db *DB) {
		ctx := context.Background()
		// Several statements in one text, without arguments.
		err := db.Tx(ctx, func(q Querier) error {
			_, err := q.Exec(ctx, "CREATE TABLE kv (k text PRIMARY KEY, n bigint NOT NULL, b bytea NOT NULL DEFAULT ''); CREATE INDEX kv_n ON kv (n)")
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		// $N placeholders, used out of order and twice.
		err = db.Tx(ctx, func(q Querier) error {
			n, err := q.Exec(ctx, "INSERT INTO kv (n, k, b) VALUES ($2, $1, $3), ($2 + 1, $1 || 'x', $3)", "a", int64(1)<<40, []byte{0, 1, 2})
			if n != 2 {
				t.Errorf("inserted %d rows, want 2", n)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		var n int64
		var b []byte
		if err := QueryRow(ctx, db.Read(), "SELECT n, b FROM kv WHERE k = $1", []any{"ax"}, &n, &b); err != nil {
			t.Fatal(err)
		}
		if n != 1<<40+1 || string(b) != "\x00\x01\x02" {
			t.Errorf("read back %d %q", n, b)
		}
		if err := QueryRow(ctx, db.Read(), "SELECT n FROM kv WHERE k = $1", []any{"none"}, &n); !errors.Is(err, ErrNoRows) {
			t.Errorf("QueryRow of nothing: %v, want ErrNoRows", err)
		}
		// A transaction that fails leaves nothing.
		boom := errors.New("boom")
		err = db.Tx(ctx, func(q Querier) error {
			if _, err := q.Exec(ctx, "INSERT INTO kv (k, n) VALUES ('c', 3)"); err != nil {
				return err
			}
			return boom
		})
		if !errors.Is(err, boom) {
			t.Fatalf("Tx returned %v, want fn's error", err)
		}
		if err := QueryRow(ctx, db.Read(), "SELECT count(*) FROM kv", nil, &n); err != nil || n != 2 {
			t.Errorf("after a rolled back transaction: %d rows (%v), want 2", n, err)
		}
		if db.Read().Engine() != db.Engine() {
			t.Errorf("the querier's engine is %s, the database's %s", db.Read().Engine(), db.Engine())
		}
	})
}

func TestSQLiteReadersDoNotWrite(t *testing.T) {
	t.Parallel()
	db := openTestSQLite(t)
	ctx := context.Background()
	if _, err := db.Read().Exec(ctx, "CREATE TABLE x (a bigint)"); err == nil {
		t.Fatal("a reader wrote: readers must be read-only, so that every write goes through the one writer")
	}
}

// A Lazy database opens while its server cannot be reached, fails its
// statements as unavailable meanwhile, and serves once the server answers,
// without being opened again.
func TestLazyOpenRecovers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	proxy := testenv.PostgresProxy(t)
	proxy.Cut()
	db, err := Open(ctx, Config{URL: proxy.Via(testenv.Postgres(t)), Lazy: true, ConnectTimeout: time.Second})
	if err != nil {
		t.Fatalf("a Lazy Open of a server that cannot be reached: %v", err)
	}
	defer db.Close()
	if _, err := db.Check(ctx, shop()); !Unavailable(err) {
		t.Fatalf("Check while the server is cut: %v, want an unavailable error", err)
	}
	if err := db.Ping(ctx); !Unavailable(err) || db.ServerVersion() != 0 {
		t.Fatalf("Ping while the server is cut: %v (version %d), want unavailable", err, db.ServerVersion())
	}
	proxy.Resume()
	testenv.Eventually(t, "the database answers once the server does", func() error { return db.Ping(ctx) })
	if db.ServerVersion() < 100000 {
		t.Errorf("the server's version once it answered: %d", db.ServerVersion())
	}
	if _, err := db.Apply(ctx, shop()); err != nil {
		t.Errorf("Apply once the server answers: %v", err)
	}
}
