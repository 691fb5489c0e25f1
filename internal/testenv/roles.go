package testenv

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// ReadOnlyRole creates a login role that may read every table of the
// database at dbURL (CONNECT, and SELECT on the public schema's tables) and
// nothing more: no pg_monitor, so PostgreSQL shows it the other roles'
// transactions only by their transaction ids. It returns the URL of that
// database as that role; ok is false, with the server's reason, when the
// tests' role may not create roles (a role with CREATEDB alone): the caller
// then tests the same through an interface, and says so. The role is
// dropped when the test ends, before its database is.
func ReadOnlyRole(t testing.TB, dbURL string) (roleURL string, ok bool, reason error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		Unavailable(t, "PostgreSQL", err)
	}
	defer conn.Close(ctx)
	name, password := Name("gwreader_"), Name("pw")
	// A password, for a server that asks one over TCP.
	if _, err := conn.Exec(ctx, "CREATE ROLE "+name+" LOGIN PASSWORD '"+password+"'"); err != nil {
		return "", false, err
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, dbURL)
		if err != nil {
			t.Logf("drop role %s: %v", name, err)
			return
		}
		defer c.Close(ctx)
		// Its sessions first: a role still connected cannot be dropped.
		_, _ = c.Exec(ctx, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1", name)
		if _, err := c.Exec(ctx, "DROP OWNED BY "+name); err != nil {
			t.Logf("drop owned by %s: %v", name, err)
		}
		if _, err := c.Exec(ctx, "DROP ROLE IF EXISTS "+name); err != nil {
			t.Logf("drop role %s: %v", name, err)
		}
	})
	var db string
	if err := conn.QueryRow(ctx, "SELECT current_database()").Scan(&db); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"GRANT CONNECT ON DATABASE " + pgx.Identifier{db}.Sanitize() + " TO " + name,
		"GRANT USAGE ON SCHEMA public TO " + name,
		"GRANT SELECT ON ALL TABLES IN SCHEMA public TO " + name,
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(name, password)
	return u.String(), true, nil
}
