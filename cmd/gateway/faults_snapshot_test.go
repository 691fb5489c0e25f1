package main

import (
	"context"
	"maps"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/invoicing-ao/gateway/internal/testenv"
)

// TestRedisRestartedFromSnapshot: a Redis that persists by RDB snapshots
// only is killed and restarted under a running `gateway serve`, and comes
// back as its last snapshot was. Everything made before the snapshot is
// kept; everything since is lost: a key revoked since works again, a key
// created since is refused, a limit or an endpoint changed since is as it
// was. Events lose nothing: the change made while Redis was down is
// delivered, and the one delivered since the snapshot is delivered again,
// under the same webhook-id. An export newer than the snapshot, imported,
// brings back what it holds (the revocation wins, the newer records win).
func TestRedisRestartedFromSnapshot(t *testing.T) {
	t.Parallel()
	srv := testenv.StartRedisServerWith(t, 0, "--save", "3600 1 300 100 60 10000")
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	r := newRig(t, "redis://"+srv.Addr()+"/0")
	rc := newReceiver(t)
	p := r.serve()

	revokedSince := r.key("revoked after the snapshot")
	r.ok("limits", "set", "--company", r.co, "--mode", "LIVE", "--rps", "7", "--burst", "9")
	ep := r.endpoint(rc.URL+"/hooks", "as at the snapshot")
	rc.trust(ep.Secret)
	rc.waitFor(r.trigger("client.created"))
	keys, eps := r.keyStates(), r.endpoints()

	if err := rdb.Save(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	r.ok("keys", "revoke", revokedSince.ID)
	createdSince := r.key("created after the snapshot")
	r.ok("limits", "set", "--company", r.co, "--mode", "LIVE", "--rps", "8", "--burst", "10")
	r.ok("webhooks", "update", ep.ID, "--description", "changed after the snapshot")
	since := r.trigger("invoice.paid")
	sinceID := rc.waitFor(since)[0]
	file := filepath.Join(t.TempDir(), "control-plane.gwstate")
	r.ok("state", "export", "--out", file)
	exported := map[string]map[string]string{"keys": r.keyStates(), "endpoints": r.endpoints()}

	srv.Kill()
	down := r.trigger("client.updated")
	srv.Restart()

	if got := r.keyStates(); !maps.Equal(got, keys) {
		t.Errorf("keys after the restart: %v, want as at the snapshot %v", got, keys)
	}
	if got := r.endpoints(); !maps.Equal(got, eps) {
		t.Errorf("endpoints after the restart: %v, want as at the snapshot %v", got, eps)
	}
	if got := r.limit(); got != "7/9" {
		t.Errorf("limit after the restart: %s, want 7/9 as at the snapshot", got)
	}
	r.becomes(p, revokedSince.Key, http.StatusOK, "a key revoked after the snapshot, after the restart")
	r.becomes(p, createdSince.Key, http.StatusUnauthorized, "a key created after the snapshot, after the restart")
	rc.waitFor(down)
	waitAccepted(t, rc, sinceID, 2)

	code, out, errs := r.gw("state", "import", file)
	if code != 0 || !strings.Contains(out, "keys      1 added, 1 updated") {
		t.Fatalf("import of the export newer than the snapshot: %d\n%s%s", code, out, errs)
	}
	if got := r.keyStates(); !maps.Equal(got, exported["keys"]) {
		t.Errorf("keys after the import: %v, want as exported %v", got, exported["keys"])
	}
	if got := r.endpoints(); !maps.Equal(got, exported["endpoints"]) {
		t.Errorf("endpoints after the import: %v, want as exported %v", got, exported["endpoints"])
	}
	if got := r.limit(); got != "8/10" {
		t.Errorf("limit after the import: %s, want 8/10 as exported", got)
	}
	r.becomes(p, revokedSince.Key, http.StatusUnauthorized, "the revocation, imported")
	r.becomes(p, createdSince.Key, http.StatusOK, "the key created after the snapshot, imported")
}

// TestRedisRestartedWithAOF: a Redis with AOF (appendfsync everysec, as
// the compose stack runs it) is killed and restarted under a running
// `gateway serve`. While it is down, a key verified lately keeps working,
// an unknown one is answered 503 (never 401), and a change fails, saying
// so, and changes nothing. Once it is back, every change answered before
// the kill is kept, the events pipeline resumes where it was (nothing
// delivered twice), and the change made while Redis was down is
// delivered.
func TestRedisRestartedWithAOF(t *testing.T) {
	t.Parallel()
	srv := testenv.StartRedisServerWith(t, 0, "--appendonly", "yes", "--appendfsync", "everysec")
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	r := newRig(t, "redis://"+srv.Addr()+"/0")
	rc := newReceiver(t)
	p := r.serve()

	revoked, active, rolled := r.key("revoked"), r.key("active"), r.key("rolled")
	r.ok("keys", "revoke", revoked.ID)
	r.ok("keys", "roll", rolled.ID)
	r.ok("limits", "set", "--company", r.co, "--mode", "LIVE", "--rps", "7", "--burst", "9")
	ep := r.endpoint(rc.URL+"/hooks", "kept")
	rc.trust(ep.Secret)
	r.ok("webhooks", "update", ep.ID, "--description", "changed before the kill")
	before := rc.waitFor(r.trigger("client.created"))[0]
	keys, eps := r.keyStates(), r.endpoints()
	// Redis writes each command to the AOF before it answers; a disk that
	// stalls can delay that write (by up to 2 s with everysec): wait for
	// the buffer to be written, as it is unless the disk stalls.
	testenv.Eventually(t, "the AOF buffer to be written", func() error {
		info := rdb.Info(context.Background(), "persistence").Val()
		return testenv.Want(strings.Contains(info, "aof_buffer_length:0\r\n"), true, info)
	})

	r.becomes(p, active.Key, http.StatusOK, "an active key, before the kill")

	srv.Kill()
	r.outage(p, active)
	down := r.trigger("client.updated")
	srv.Restart()

	if got := r.keyStates(); !maps.Equal(got, keys) {
		t.Errorf("keys after the restart: %v, want %v", got, keys)
	}
	if got := r.endpoints(); !maps.Equal(got, eps) {
		t.Errorf("endpoints after the restart: %v, want %v", got, eps)
	}
	if got := r.limit(); got != "7/9" {
		t.Errorf("limit after the restart: %s, want 7/9", got)
	}
	r.becomes(p, revoked.Key, http.StatusUnauthorized, "a revoked key, after the restart")
	r.becomes(p, active.Key, http.StatusOK, "an active key, after the restart")
	rc.waitFor(down)
	if n := rc.accepted(before); n != 1 {
		t.Errorf("the event delivered before the kill was accepted %d times", n)
	}
}

// outage checks what `gateway serve` answers while its Redis is down: the
// key verified lately works, an unknown key is 503 (never 401); and that a
// change fails, saying what did, and changes nothing (the key still works
// once Redis is back: checked by the caller's states).
func (r *rig) outage(p *process, verified made) {
	r.t.Helper()
	for _, c := range []struct {
		secret string
		want   int
	}{{verified.Key, http.StatusOK}, {"igw_live_" + strings.Repeat("Z", 43), http.StatusServiceUnavailable}} {
		req, _ := http.NewRequest(http.MethodGet, p.pub+"/api/v1/v1/clients?pageSize=1", nil)
		req.Header.Set("Authorization", "Bearer "+c.secret)
		req.Header.Set("X-Company-Id", r.co)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			r.t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != c.want {
			r.t.Errorf("Redis down: a key answered %d, want %d", res.StatusCode, c.want)
		}
	}
	code, out, errs := r.gw("keys", "revoke", verified.ID)
	if code != 1 || out != "" || !strings.Contains(errs, "connection refused") {
		r.t.Errorf("keys revoke, Redis down: exit %d, %q %q; want exit 1 saying why", code, out, errs)
	}
}
