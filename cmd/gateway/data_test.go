package main

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/invoicing-ao/gateway/internal/testenv"
)

// `gateway data schema` run twice says the schema is there already, and
// exits 0: the README's steps can be run again. A database that holds a
// table of the same name but not the schema is named, in plain words, and
// the command fails.
func TestDataSchemaTwice(t *testing.T) {
	t.Parallel()
	live, test := testenv.Postgres(t), testenv.Postgres(t)
	env := envOf(map[string]string{"GATEWAY_LIVE_DATABASE_URL": live, "GATEWAY_TEST_DATABASE_URL": test})
	if code, out, errs := runCLI(env, "data", "schema"); code != 0 || strings.Count(out, "schema loaded into") != 2 {
		t.Fatalf("first: %d\n%s\n%s", code, out, errs)
	}
	code, out, errs := runCLI(env, "data", "schema")
	if code != 0 || strings.Count(out, "the schema is already in") != 2 || errs != "" {
		t.Fatalf("second: %d\n%s\n%s", code, out, errs)
	}

	dir := t.TempDir()
	lite := envOf(map[string]string{"GATEWAY_LIVE_DATABASE_URL": "sqlite:" + dir + "/live.db", "GATEWAY_TEST_DATABASE_URL": "sqlite:" + dir + "/test.db"})
	for i, want := range []string{"schema loaded into", "the schema is already in"} {
		if code, out, errs := runCLI(lite, "data", "schema"); code != 0 || strings.Count(out, want) != 2 {
			t.Fatalf("SQLite, run %d: %d\n%s\n%s", i+1, code, out, errs)
		}
	}

	other := testenv.Postgres(t)
	conn, err := pgx.Connect(context.Background(), other)
	if err != nil {
		t.Fatal(err)
	}
	_, err = conn.Exec(context.Background(), `CREATE TABLE companies (name text)`)
	conn.Close(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	code, out, errs = runCLI(env, "data", "schema", "--database", other)
	if code != 1 || !strings.Contains(errs, `already has a table "companies"`) || strings.Contains(errs, "SQLSTATE") || strings.Contains(errs, "backend:") {
		t.Fatalf("into a database of another schema: %d\n%s\n%s", code, out, errs)
	}
}
