// Package testenv gives tests their own PostgreSQL database and Redis key
// prefix on the real services, and cleans them up afterwards. When a service is
// missing the test is skipped, except under CI=true, where it fails: CI must
// never go green by skipping what it was meant to test.
package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
)

// PostgresAdminURL is the server tests create their databases on
// (TEST_POSTGRES_URL, default the local server's "test" database as root).
func PostgresAdminURL() string {
	if u := os.Getenv("TEST_POSTGRES_URL"); u != "" {
		return u
	}
	return "postgres://root@127.0.0.1:5432/test?sslmode=disable"
}

// RedisURL is the Redis server tests use (TEST_REDIS_URL, default local 6379/0).
func RedisURL() string {
	if u := os.Getenv("TEST_REDIS_URL"); u != "" {
		return u
	}
	return "redis://127.0.0.1:6379/0"
}

// Unavailable skips the test, or fails it under CI=true.
func Unavailable(t testing.TB, what string, err error) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is required under CI=true: %v", what, err)
	}
	t.Skipf("%s not available (set CI=true to make this a failure): %v", what, err)
}

// Name returns a short random name with the given prefix, safe as a database
// name or a Redis key prefix.
func Name(prefix string) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// ClosedPort is a loopback port nothing listens on (one was free a moment
// ago): where a dependency that is down, or not yet up, is.
func ClosedPort(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	ln.Close()
	return port
}

// Postgres creates an empty database for this test and returns its URL. The
// database is dropped when the test ends.
func Postgres(t testing.TB) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	admin := PostgresAdminURL()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		Unavailable(t, "PostgreSQL", err)
	}
	defer conn.Close(ctx)
	name := Name("gwtest_")
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, admin)
		if err != nil {
			t.Logf("drop database %s: %v", name, err)
			return
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Logf("drop database %s: %v", name, err)
		}
	})
	u, err := url.Parse(admin)
	if err != nil {
		t.Fatalf("parse %s: %v", admin, err)
	}
	u.Path = "/" + name
	return u.String()
}

// Redis returns a client of the real Redis and a key prefix of this test's own
// (ending in ":"). Every key under the prefix is deleted when the test ends;
// nothing else is touched.
func Redis(t testing.TB) (*redis.Client, string) {
	t.Helper()
	opt, err := redis.ParseURL(RedisURL())
	if err != nil {
		t.Fatalf("parse %s: %v", RedisURL(), err)
	}
	rdb := redis.NewClient(opt)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err != nil {
		_ = rdb.Close()
		Unavailable(t, "Redis", err)
	}
	prefix := Name("gwtest:") + ":"
	t.Cleanup(func() {
		defer rdb.Close()
		DeletePrefix(t, rdb, prefix)
	})
	return rdb, prefix
}

// DeletePrefix deletes every key that starts with prefix.
func DeletePrefix(t testing.TB, rdb redis.UniversalClient, prefix string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	iter := rdb.Scan(ctx, 0, prefix+"*", 1000).Iterator()
	var batch []string
	for iter.Next(ctx) {
		batch = append(batch, iter.Val())
	}
	if err := iter.Err(); err != nil {
		t.Logf("scan %s*: %v", prefix, err)
	}
	for _, k := range batch {
		if err := rdb.Del(ctx, k).Err(); err != nil {
			t.Logf("del %s: %v", k, err)
		}
	}
}

// Miniredis returns a client of an in-process miniredis, closed when the test
// ends, and the server itself (to fast-forward its clock or close it).
func Miniredis(t testing.TB) (*redis.Client, *miniredis.Miniredis) {
	t.Helper()
	mr := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb, mr
}

// RedisBackends runs fn once against real Redis and once against miniredis, as
// subtests: the conformance pattern for code that talks to Redis.
func RedisBackends(t *testing.T, fn func(t *testing.T, rdb *redis.Client, prefix string)) {
	t.Run("redis", func(t *testing.T) {
		rdb, prefix := Redis(t)
		fn(t, rdb, prefix)
	})
	t.Run("miniredis", func(t *testing.T) {
		rdb, _ := Miniredis(t)
		fn(t, rdb, fmt.Sprintf("%s:", Name("mr")))
	})
}

// LockTable holds an ACCESS EXCLUSIVE lock on table of the PostgreSQL
// database at url, so that the queries of the code under test wait on it, as
// behind a long migration. It returns the transaction that holds the lock:
// the test rolls it back to release the lock (else the test's end does).
func LockTable(t testing.TB, url, table string) pgx.Tx {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(ctx) })
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(ctx) })
	if _, err := tx.Exec(ctx, "LOCK TABLE "+pgx.Identifier{table}.Sanitize()+" IN ACCESS EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	return tx
}
