package main

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/invoicing-ao/gateway/internal/testenv"
)

// TestFlushallThenImport: the Redis of a running `gateway serve` is emptied
// (FLUSHALL, what a restart without persistence leaves), then the last
// export is imported with `gateway state import`: every key, limit and
// endpoint is back with its id and state, a revoked key is still refused,
// the others work, and every change of the recovery window reaches the
// restored endpoint, verified with its secret of before: one delivered
// before the export, one between the export and the loss, one waiting for
// its retry when Redis was lost, one made during the loss (which detection
// passed by, finding no endpoint), one after the import. None is lost;
// the one delivered before the export does not come again (detection and
// its sweep resume at the export's resume point), the one delivered
// between the export and the loss may, under the same webhook-id. What
// came after the export is lost as documented: a key revoked since works
// again, until revoked again.
func TestFlushallThenImport(t *testing.T) {
	t.Parallel()
	srv := testenv.StartRedisServerWith(t, 0, "--appendonly", "yes")
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	r := newRig(t, "redis://"+srv.Addr()+"/0")
	rc := newReceiver(t)
	p := r.serve()

	active, revoked, rolled, later := r.key("active"), r.key("revoked"), r.key("rolled"), r.key("revoked after the export")
	r.ok("keys", "revoke", revoked.ID)
	var successor made
	r.json(&successor, "keys", "roll", rolled.ID)
	r.ok("limits", "set", "--company", r.co, "--mode", "LIVE", "--rps", "7", "--burst", "9")
	ep := r.endpoint(rc.URL+"/hooks", "restored")
	rc.trust(ep.Secret)
	deleted := r.endpoint(rc.URL+"/deleted", "deleted before the export")
	r.ok("webhooks", "delete", deleted.ID)
	before := r.trigger("client.created")
	rc.waitFor(before)

	file, pass := r.export()
	keys, eps, limit := r.keyStates(), r.endpoints(), r.limit()
	if len(keys) != 5 || len(eps) != 1 || limit != "7/9" {
		t.Fatalf("exported: keys %v, endpoints %v, limit %s", keys, eps, limit)
	}

	afterExport := r.trigger("invoice.paid")
	rc.waitFor(afterExport)
	r.ok("keys", "revoke", later.ID)
	rc.refuse(true)
	waiting := r.trigger("client.updated")
	r.waitAttempted(ep.ID, waiting)

	// The loss, under the running gateway.
	if err := rdb.FlushAll(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	if k, e := r.keyStates(), r.endpoints(); len(k)+len(e) != 0 {
		t.Fatalf("after FLUSHALL: keys %v, endpoints %v", k, e)
	}
	rc.refuse(false)
	during := r.trigger("client.created")
	waitWatermarkPast(t, rdb, "events:{events}:wm:TEST:clients", time.Now())

	out := r.ok("state", "import", file, "--passphrase-file", pass)
	for _, want := range []string{"keys      5 added", "limits    1 added", "webhooks  1 added", "TEST: detection resumes at the export's resume point"} {
		if !strings.Contains(out, want) {
			t.Errorf("import said:\n%s\nwant %q", out, want)
		}
	}
	after := r.trigger("invoice.issued")
	ids := rc.waitFor(before, afterExport, waiting, during, after)

	if got := r.keyStates(); !maps.Equal(got, keys) {
		t.Errorf("keys after the import: %v, want %v", got, keys)
	}
	if got := r.endpoints(); !maps.Equal(got, eps) {
		t.Errorf("endpoints after the import: %v, want %v", got, eps)
	}
	if got := r.limit(); got != limit {
		t.Errorf("limit after the import: %s, want %s", got, limit)
	}
	r.answers(p, map[string]int{active.Key: 200, revoked.Key: 401, rolled.Key: 200, successor.Key: 200,
		later.Key: 200}) // revoked after the export: lost with Redis, it works again
	r.ok("keys", "revoke", later.ID)
	r.becomes(p, later.Key, 401, "key revoked again after the import")

	// Lost: none. Again: only what was delivered between the export and
	// the loss.
	for i, id := range ids {
		if n := rc.accepted(id); n != 1 && i != 1 {
			t.Errorf("%s was accepted %d times, want once", []string{before, afterExport, waiting, during, after}[i], n)
		}
	}
	t.Logf("after the loss and the import: 5 changes of the window, 0 lost; delivered again: %v", rc.duplicates())
}

// waitAttempted waits until endpoint ep's delivery of change ("type id")
// has been attempted at least once and is waiting for a retry.
func (r *rig) waitAttempted(ep, change string) {
	r.t.Helper()
	typ, id, _ := strings.Cut(change, " ")
	testenv.Eventually(r.t, "an attempt of "+change+" waiting for its retry", func() error {
		var log struct {
			Data []struct {
				ResourceID, State string
				Log               []struct{ Status int }
			}
		}
		r.json(&log, "webhooks", "deliveries", ep, "--type", typ)
		for _, d := range log.Data {
			if d.ResourceID == id && len(d.Log) > 0 && d.State == "pending" {
				return nil
			}
		}
		return fmt.Errorf("deliveries %+v", log.Data)
	})
}

// waitWatermarkPast waits until the detector stream whose watermark is
// the key wm has read past at: a change made before at, found without an
// endpoint, is then passed by.
func waitWatermarkPast(t *testing.T, rdb *redis.Client, wm string, at time.Time) {
	t.Helper()
	testenv.Eventually(t, "the watermark "+wm+" past "+at.String(), func() error {
		v := rdb.Get(context.Background(), wm).Val()
		us, _, _ := strings.Cut(v, "|")
		n, err := strconv.ParseInt(us, 10, 64)
		return testenv.Want(err == nil && time.UnixMicro(n).After(at), true, "watermark "+v)
	})
}

// export runs `gateway state export` encrypted to a passphrase, as a
// scheduled export does, and returns the file and the passphrase's file.
func (r *rig) export() (file, passphrase string) {
	r.t.Helper()
	dir := r.t.TempDir()
	file, passphrase = filepath.Join(dir, "control-plane.gwstate"), filepath.Join(dir, "passphrase")
	if err := os.WriteFile(passphrase, []byte("correct horse battery staple\n"), 0o600); err != nil {
		r.t.Fatal(err)
	}
	r.ok("state", "export", "--out", file, "--passphrase-file", passphrase)
	return file, passphrase
}

// answers waits until p answers each secret with its status.
func (r *rig) answers(p *process, want map[string]int) {
	r.t.Helper()
	for secret, status := range want {
		r.becomes(p, secret, status, "key …"+secret[len(secret)-4:])
	}
}
