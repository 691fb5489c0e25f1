package doctest

import (
	"context"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/invoicing-ao/gateway/backend/gendata"
	"github.com/invoicing-ao/gateway/internal/testenv"
)

// The PostgreSQL role the tests run as holds no more than they need:
// .ci/test and the README's steps make one that may create databases,
// never a superuser, and such a role does all the tests do with the
// database: make databases of its own, put the platform's schema (with its
// pg_trgm extension) and the demo data in them, and drop them with FORCE.
func TestTestRoleIsNoSuperuser(t *testing.T) {
	t.Parallel()
	for _, f := range []string{repoRoot + "/.ci/test", repoRoot + "/README.md"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		made := 0
		for _, line := range strings.Split(string(b), "\n") {
			if !strings.Contains(line, "createuser ") && !strings.Contains(line, "CREATE ROLE") && !strings.Contains(line, "ALTER ROLE") {
				continue
			}
			made++
			for _, w := range strings.Fields(line) {
				if w == "-s" || strings.Contains(strings.ToLower(strings.Trim(w, `"';`)), "superuser") {
					t.Errorf("%s makes a superuser: %s", f, strings.TrimSpace(line))
				}
			}
		}
		if made == 0 {
			t.Errorf("%s makes no role: is this test still looking at the right lines?", f)
		}
	}
	asCreatedbRole(t)
}

// asCreatedbRole makes a role with LOGIN CREATEDB only, and does as it what
// the tests do; it skips when the tests' own role may not make roles, or
// the server does not let the new one log in over TCP.
func asCreatedbRole(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin, err := pgx.Connect(ctx, testenv.PostgresAdminURL())
	if err != nil {
		testenv.Unavailable(t, "PostgreSQL", err)
	}
	role, password := testenv.Name("gwtest_role_"), testenv.Name("pw")
	_, err = admin.Exec(ctx, "CREATE ROLE "+role+" LOGIN CREATEDB PASSWORD '"+password+"'")
	admin.Close(ctx)
	if err != nil {
		t.Skipf("the tests' role may not make roles: %v", err)
	}
	var dbs []string
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		admin, err := pgx.Connect(ctx, testenv.PostgresAdminURL())
		if err != nil {
			t.Logf("drop role %s: %v", role, err)
			return
		}
		defer admin.Close(ctx)
		for _, db := range dbs {
			_, _ = admin.Exec(ctx, "DROP DATABASE IF EXISTS "+db+" WITH (FORCE)")
		}
		if _, err := admin.Exec(ctx, "DROP ROLE IF EXISTS "+role); err != nil {
			t.Logf("drop role %s: %v", role, err)
		}
	})
	u, err := url.Parse(testenv.PostgresAdminURL())
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(role, password)
	as, err := pgx.Connect(ctx, u.String())
	if err != nil {
		t.Skipf("the server does not let a new role log in over TCP: %v", err)
	}
	defer as.Close(context.Background())
	urls := make([]string, 2)
	for i := range urls {
		db := testenv.Name("gwtest_")
		if _, err := as.Exec(ctx, "CREATE DATABASE "+db); err != nil {
			t.Fatalf("a CREATEDB role cannot create a database: %v", err)
		}
		dbs = append(dbs, db)
		du := *u
		du.Path = "/" + db
		urls[i] = du.String()
	}
	if _, err := gendata.SetUpSmall(ctx, urls[0], urls[1], 1); err != nil {
		t.Fatalf("a CREATEDB role cannot set up the platform's schema and data: %v", err)
	}
	for _, db := range dbs {
		if _, err := as.Exec(ctx, "DROP DATABASE "+db+" WITH (FORCE)"); err != nil {
			t.Fatalf("a CREATEDB role cannot drop its database: %v", err)
		}
	}
}
