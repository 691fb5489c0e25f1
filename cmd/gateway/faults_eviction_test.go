package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/invoicing-ao/gateway/internal/testenv"
)

// TestEvictionLosesTheControlPlane: `gateway serve` refuses a Redis that
// evicts (TestServeRefusesEvictingRedis); started anyway, with
// redisAllowEviction, on a Redis with allkeys-lru, it loses the control
// plane to memory pressure silently: once other data fills the memory, a
// key's record, the company's limit and an endpoint are evicted, and the
// key is refused (401) as if it had never been made. What to do: set
// noeviction, give Redis room, and import the last export, which brings
// every record back.
func TestEvictionLosesTheControlPlane(t *testing.T) {
	t.Parallel()
	srv := testenv.StartRedisServerWith(t, 0, "--appendonly", "yes", "--maxmemory", "8mb", "--maxmemory-policy", "allkeys-lru")
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	r := newRig(t, "redis://"+srv.Addr()+"/0")
	p := r.serve("GATEWAY_REDIS_ALLOW_EVICTION=true")

	k := r.key("evicted")
	r.ok("limits", "set", "--company", r.co, "--mode", "LIVE", "--rps", "7", "--burst", "9")
	ep := r.lendpoint("evicted")
	r.becomes(p, k.Key, http.StatusOK, "the key, before the pressure")
	file := filepath.Join(t.TempDir(), "control-plane.gwstate")
	r.ok("state", "export", "--out", file)

	digest := sha256.Sum256([]byte(k.Key))
	records := []string{"authz:key:" + hex.EncodeToString(digest[:]), "tenants:{" + r.co + "}:limits", "events:{events}:ep:" + ep.ID}
	for _, rec := range records {
		if rdb.Exists(context.Background(), rec).Val() != 1 {
			t.Fatalf("no record %s: the layout changed?", rec)
		}
	}
	fill(t, rdb, func() bool { return rdb.Exists(context.Background(), records...).Val() == 0 })

	r.becomes(p, k.Key, http.StatusUnauthorized, "the key whose record was evicted")
	if got := r.limit(); got != "50/100" {
		t.Errorf("the limit, evicted: %s, want the default 50/100", got)
	}
	if eps := r.endpoints(); eps[ep.ID] != "" {
		t.Errorf("the endpoint, evicted, is still listed: %v", eps)
	}

	ctx := context.Background()
	if err := rdb.ConfigSet(ctx, "maxmemory-policy", "noeviction").Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.ConfigSet(ctx, "maxmemory", "0").Err(); err != nil {
		t.Fatal(err)
	}
	r.ok("state", "import", file)
	r.becomes(p, k.Key, http.StatusOK, "the key, imported")
	if got := r.limit(); got != "7/9" {
		t.Errorf("the limit, imported: %s, want 7/9", got)
	}
	if eps := r.endpoints(); eps[ep.ID] == "" {
		t.Errorf("the endpoint, imported, is not listed: %v", eps)
	}
}

// TestFullRedisRefusesChanges: a Redis with noeviction whose memory is
// full refuses every write: changes fail (exit 1, saying that Redis is
// full and what to do; 503 from the admin API) and change nothing, while
// keys keep verifying.
// Given room, the same commands succeed.
func TestFullRedisRefusesChanges(t *testing.T) {
	t.Parallel()
	srv := testenv.StartRedisServerWith(t, 0, "--appendonly", "yes", "--maxmemory", "8mb", "--maxmemory-policy", "noeviction")
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	r := newRig(t, "redis://"+srv.Addr()+"/0")
	p := r.serve()
	k := r.key("kept")
	r.ok("limits", "set", "--company", r.co, "--mode", "LIVE", "--rps", "7", "--burst", "9")
	r.becomes(p, k.Key, http.StatusOK, "the key, before Redis is full")
	keys, eps := r.keyStates(), r.endpoints()

	var full error
	fill(t, rdb, func() bool {
		full = rdb.Set(context.Background(), "other:probe", strings.Repeat("x", 1024), 0).Err()
		return full != nil
	})
	if !strings.HasPrefix(full.Error(), "OOM ") {
		t.Fatalf("a write to the full Redis: %v", full)
	}
	// At the limit, Redis's memory moves (keys expire, the gateway deletes
	// some of its own) and a small write can fit again: maxmemory is put
	// well below what is used, so that it stays full whatever the timing.
	if err := rdb.ConfigSet(context.Background(), "maxmemory", strconv.FormatInt(usedMemory(t, rdb)/2, 10)).Err(); err != nil {
		t.Fatal(err)
	}
	changes := [][]string{
		{"keys", "revoke", k.ID},
		{"keys", "create", "--company", r.co, "--mode", "LIVE", "--scopes", "clients:read"},
		{"limits", "set", "--company", r.co, "--mode", "LIVE", "--rps", "8", "--burst", "10"},
		{"webhooks", "create", "--company", r.co, "--mode", "LIVE", "--url", "http://127.0.0.1:9/full"},
	}
	for _, args := range changes {
		code, out, errs := r.gw(args...)
		if code != 1 || out != "" || !strings.Contains(errs, "Redis is full") || !strings.Contains(errs, "raise maxmemory") {
			t.Errorf("%v on a full Redis: exit %d, %q %q; want exit 1 saying Redis is full and what to do", args, code, out, errs)
		}
	}
	if status, body := adminCall(t, p, http.MethodDelete, "/admin/v1/keys/"+k.ID, ""); status != http.StatusServiceUnavailable {
		t.Errorf("revoke through the admin API on a full Redis: %d %s, want 503", status, body)
	}
	if got := r.keyStates(); !maps.Equal(got, keys) {
		t.Errorf("keys after the refused changes: %v, want %v", got, keys)
	}
	if got := r.endpoints(); !maps.Equal(got, eps) {
		t.Errorf("endpoints after the refused changes: %v, want %v", got, eps)
	}
	if got := r.limit(); got != "7/9" {
		t.Errorf("limit after the refused changes: %s", got)
	}
	if got := r.answer(p, k.Key); got != http.StatusOK {
		t.Errorf("the key on a full Redis: %d, want 200", got)
	}

	if err := rdb.ConfigSet(context.Background(), "maxmemory", "0").Err(); err != nil {
		t.Fatal(err)
	}
	for _, args := range changes {
		r.ok(args...)
	}
	r.becomes(p, k.Key, http.StatusUnauthorized, "the key revoked once Redis had room")
}

// fill writes other data (1 KiB values, as another application sharing
// Redis, or the gateway's own usage and idempotency records, would) until
// done says so, or fails after a few hundred times Redis's memory.
func fill(t *testing.T, rdb *redis.Client, done func() bool) {
	t.Helper()
	ctx := context.Background()
	value := strings.Repeat("x", 1024)
	for batch := 0; batch < 2000; batch++ {
		pipe := rdb.Pipeline()
		for i := range 100 {
			pipe.Set(ctx, fmt.Sprintf("other:%d:%d", batch, i), value, 0)
		}
		_, _ = pipe.Exec(ctx) // a full Redis refuses them: done says when
		if done() {
			return
		}
	}
	t.Fatal("200,000 writes of 1 KiB and still not done")
}

// usedMemory is Redis's used_memory.
func usedMemory(t *testing.T, rdb *redis.Client) int64 {
	t.Helper()
	info := rdb.Info(context.Background(), "memory").Val()
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "used_memory:"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err == nil {
				return n
			}
		}
	}
	t.Fatalf("no used_memory in INFO memory:\n%s", info)
	return 0
}
