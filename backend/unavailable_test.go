package backend_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/backend"
	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
	"github.com/jackc/pgx/v5"
)

func TestOpenUnreachable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cases := []string{
		"postgres://root@127.0.0.1:1/nothing?sslmode=disable", // closed port
		"sqlite:" + filepath.Join(t.TempDir(), "missing-dir", "x.db"),
	}
	for _, url := range cases {
		s, err := backend.Open(ctx, backend.Config{URL: url, QueryTimeout: time.Second})
		if !errors.Is(err, backend.ErrUnavailable) {
			if s != nil {
				s.Close()
			}
			t.Errorf("Open(%s): %v, want ErrUnavailable", url, err)
		}
	}
	for _, url := range []string{"", "mysql://x", "sqlite:", "postgres://root:secret@[::1"} {
		_, err := backend.Open(ctx, backend.Config{URL: url})
		if err == nil || errors.Is(err, backend.ErrUnavailable) || strings.Contains(err.Error(), "secret") {
			t.Errorf("Open(%q): %v, want a configuration error without the password", url, err)
		}
	}
}

func TestSQLiteCreatesFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "new.db")
	s, err := backend.Open(context.Background(), backend.Config{URL: "sqlite:" + path})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Engine() != "sqlite" {
		t.Fatalf("engine %s", s.Engine())
	}
	if err := backend.ApplySchema(context.Background(), "sqlite:"+path); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Company(context.Background(), coA); !errors.Is(err, backend.ErrNotFound) {
		t.Fatalf("empty database: %v", err)
	}
}

func TestPostgresDatabaseDropped(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := postgresDB(false)(t)
	load(t, url, liveFixtures())
	s := openStore(t, url, fixedNow)
	if s.Engine() != "postgres" {
		t.Fatalf("engine %s", s.Engine())
	}
	if _, err := s.GetClient(ctx, coA, cliCompany); err != nil {
		t.Fatal(err)
	}
	admin, err := pgx.Connect(ctx, testenv.PostgresAdminURL())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	name := url[strings.LastIndex(url, "/")+1:]
	if i := strings.IndexByte(name, '?'); i >= 0 {
		name = name[:i]
	}
	if _, err := admin.Exec(ctx, "DROP DATABASE "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ { // the pooled connection is dead, then new ones fail
		if _, err := s.GetClient(ctx, coA, cliCompany); !errors.Is(err, backend.ErrUnavailable) {
			t.Fatalf("call %d after DROP DATABASE: %v, want ErrUnavailable", i, err)
		}
	}
	if err := s.Ping(ctx); !errors.Is(err, backend.ErrUnavailable) {
		t.Fatalf("Ping after DROP DATABASE: %v", err)
	}
}

// A statement stuck behind a lock ends at QueryTimeout as ErrUnavailable.
func TestPostgresQueryTimeout(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := postgresDB(false)(t)
	load(t, url, liveFixtures())
	s, err := backend.Open(ctx, backend.Config{URL: url, QueryTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tx := testenv.LockTable(t, url, "customers")
	if _, err := s.GetClient(ctx, coA, cliCompany); !errors.Is(err, backend.ErrUnavailable) {
		t.Fatalf("GetClient behind a lock: %v, want ErrUnavailable", err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetClient(ctx, coA, cliCompany); err != nil {
		t.Fatalf("after the lock: %v", err)
	}
}

// A writer blocked by another writer past QueryTimeout is ErrUnavailable;
// readers are not blocked under WAL, and the lock's end frees writers.
//
// Nothing here depends on how fast the machine is: the lock is held until
// the blocked writer and the reader have answered, so the writer can only
// fail and the reader can only succeed if readers are not blocked. The
// writer's Store has a short QueryTimeout (its busy timeout too) so that it
// gives up soon; the reader and the writer after the lock use a Store with a
// generous one, so that a slow machine makes them late, not failed.
func TestSQLiteBusy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := sqliteDB(t)
	load(t, url, liveFixtures())
	now := func() time.Time { return fixedNow }
	// Lazy: Open's ping would have to answer within the short timeout too,
	// and opening is not what this test is about.
	s, err := backend.Open(ctx, backend.Config{URL: url, QueryTimeout: 200 * time.Millisecond, Lazy: true, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	patient, err := backend.Open(ctx, backend.Config{URL: url, QueryTimeout: time.Minute, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	defer patient.Close()
	db, err := sql.Open("sqlite", strings.TrimPrefix(url, "sqlite:"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	_, err = s.CreateClient(ctx, coW, invoicing.NewClient{Name: "Bloqueado"})
	if !errors.Is(err, backend.ErrUnavailable) {
		t.Fatalf("create while another writer holds the lock: %v, want ErrUnavailable", err)
	}
	// A blocked reader would wait out the minute and fail: the lock is
	// still held.
	if _, err := patient.GetClient(ctx, coA, cliCompany); err != nil {
		t.Fatalf("a reader is not blocked under WAL: %v", err)
	}
	if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	if _, err := patient.CreateClient(ctx, coW, invoicing.NewClient{Name: "Livre"}); err != nil {
		t.Fatalf("a write after the lock: %v", err)
	}
	// The Store that was refused writes again too. Its 200 ms budget is
	// tight on a busy machine (a miss, and the breaker's refusals after a
	// few, are ErrUnavailable): it is tried again until it succeeds.
	testenv.Eventually(t, "a write after the lock on the Store that was refused", func() error {
		_, err := s.CreateClient(ctx, coW, invoicing.NewClient{Name: "Livre de novo"})
		if err != nil && !errors.Is(err, backend.ErrUnavailable) {
			t.Fatalf("after the lock: %v", err)
		}
		return err
	})
}

// A Lazy Store opens while its database is down, fails its calls with
// ErrUnavailable meanwhile, and serves once the database answers, with no
// new Open: what a gateway started during an outage relies on.
func TestLazyOpenRecovers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := postgresDB(false)(t)
	load(t, url, liveFixtures())
	proxy := testenv.PostgresProxy(t)
	proxy.Cut()
	if _, err := backend.Open(ctx, backend.Config{URL: proxy.Via(url), QueryTimeout: time.Second}); !errors.Is(err, backend.ErrUnavailable) {
		t.Fatalf("eager Open of a cut database: %v, want ErrUnavailable", err)
	}
	s, err := backend.Open(ctx, backend.Config{URL: proxy.Via(url), QueryTimeout: time.Second, Lazy: true,
		BreakerFailures: 100, Now: func() time.Time { return fixedNow }})
	if err != nil {
		t.Fatalf("lazy Open of a cut database: %v", err)
	}
	defer s.Close()
	if err := s.Ping(ctx); !errors.Is(err, backend.ErrUnavailable) {
		t.Fatalf("Ping while cut: %v", err)
	}
	if _, err := s.GetClient(ctx, coA, cliCompany); !errors.Is(err, backend.ErrUnavailable) {
		t.Fatalf("call while cut: %v", err)
	}
	proxy.Resume()
	if err := s.Ping(ctx); err != nil {
		t.Fatalf("Ping once the database is back: %v", err)
	}
	if _, err := s.GetClient(ctx, coA, cliCompany); err != nil {
		t.Fatalf("call once the database is back: %v", err)
	}
}
