package main

import (
	"net/http"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/internal/testenv"
)

// TestInstanceKilled: a `gateway serve` process killed (SIGKILL, as an
// out-of-memory kill or a lost node) in the middle of a webhook delivery
// loses nothing of the control plane, which is in Redis: another instance
// serves the key it made, applies the limit, lists the endpoint; the
// delivery it had in flight is made again by the other instance once its
// lease ends (the receiver, which had taken it, gets it twice, under one
// webhook-id); and the changes that follow are delivered.
func TestInstanceKilled(t *testing.T) {
	t.Parallel()
	srv := testenv.StartRedisServerWith(t, 0, "--appendonly", "yes")
	r := newRig(t, "redis://"+srv.Addr()+"/0")
	rc := newReceiver(t)
	a := r.serve()

	status, body := adminCall(t, a, http.MethodPost, "/admin/v1/keys",
		`{"companyId":"`+r.co+`","mode":"LIVE","scopes":["clients:read"],"name":"made on the killed instance"}`)
	if status != http.StatusCreated {
		t.Fatalf("create: %d %s", status, body)
	}
	k := made{Key: secretIn(t, body)}
	r.ok("limits", "set", "--company", r.co, "--mode", "LIVE", "--rps", "7", "--burst", "9")
	ep := r.endpoint(rc.URL+"/hooks", "kept")
	rc.trust(ep.Secret)
	eps := r.endpoints()
	r.becomes(a, k.Key, http.StatusOK, "the key on the instance that made it")

	waiting, release := rc.holdNext()
	t.Cleanup(release)
	inFlight := r.trigger("client.created")
	select {
	case <-waiting:
	case <-time.After(3 * time.Minute):
		t.Fatal("the delivery never reached the receiver")
	}
	if err := a.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = a.cmd.Wait()
	release() // the receiver takes the delivery; its sender is gone

	b := r.serve()
	r.becomes(b, k.Key, http.StatusOK, "the key made on the killed instance, on another")
	r.policyBecomes(b, k.Key, `"live";q=9;w=2`)
	if got := r.endpoints(); got[ep.ID] != eps[ep.ID] {
		t.Errorf("the endpoint after the kill: %q, want %q", got[ep.ID], eps[ep.ID])
	}
	id := rc.waitFor(inFlight)[0]
	waitAccepted(t, rc, id, 2)
	rc.waitFor(r.trigger("invoice.paid"))
}
