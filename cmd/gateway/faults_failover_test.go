package main

import (
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/invoicing-ao/gateway/backend/gendata"
	"github.com/invoicing-ao/gateway/internal/testenv"
)

// TestFailoverOnShippedDefaults is a Sentinel deployment's failover as
// operators meet it: three `gateway serve` processes and the command line
// on the shipped configuration (redisMinReplicas auto, the default replica
// timeout), a master, a replica and a Sentinel. Each change the platform
// team makes is made with the replica in sync, and again with it lagging
// (its link held back: the master has what the replica has not); then the
// master dies with what it had not sent, and the Sentinel promotes the
// replica. A change answered done is in effect on every instance after the
// promotion; a change made while the replica lagged is refused as
// unconfirmed (exit 1, 503 change_not_replicated), never answered done,
// whatever became of it: a revocation either kept or refused, never
// answered ok and then active.
func TestFailoverOnShippedDefaults(t *testing.T) {
	t.Parallel()
	rr := testenv.RedisReplicated(t)
	r := newRig(t, "redis+sentinel://"+rr.Sentinel+"/0?master_name="+rr.Name)
	procs := []*process{r.serve(), r.serve(), r.serve()}
	w := &failoverWorld{r: r, procs: procs}
	w.inSync()
	rr.Synced()
	rr.Link.Pause()
	w.lagging()
	rr.Failover()
	// A fourth instance, started after the promotion, knows only what
	// Redis has.
	w.procs = append(w.procs, r.serve())
	w.confirmedKept()
	w.unconfirmedFates()
	// Until a replica is back, no change can be confirmed, and none is
	// said to be done.
	r.refused("keys", "revoke", w.lagRevoked.ID)
}

// failoverWorld is what the changes made: those made in sync, answered
// done, and those made while the replica lagged, refused.
type failoverWorld struct {
	r     *rig
	procs []*process

	revoked, viaAdmin, created, rolled, successor made
	epCreated, epUpdated, epRotated, epDeleted    made
	endpointsDone                                 map[string]string // co's endpoints once the changes in sync were done

	lagRevoked, lagAdminRevoked, lagRolled made
	lagUpdated, lagRotated, lagDeleted     made
}

// inSync makes every change with the replica in sync. The default timeout
// is short for a busy machine: a change it reports unconfirmed is
// repeated, as operators are told to, until it is done.
func (w *failoverWorld) inSync() {
	r := w.r
	w.revoked, w.created, w.rolled = r.key("revoked in sync"), r.key("created in sync"), r.key("rolled in sync")
	w.lagRevoked, w.lagAdminRevoked, w.lagRolled = r.key("revoked lagging"), r.key("revoked lagging, admin API"), r.key("rolled lagging")
	w.epCreated, w.epUpdated, w.epRotated, w.epDeleted = r.lendpoint("created"), r.lendpoint("updated"), r.lendpoint("rotated"), r.lendpoint("deleted")
	w.lagUpdated, w.lagRotated, w.lagDeleted = r.lendpoint("updated lagging"), r.lendpoint("rotated lagging"), r.lendpoint("deleted lagging")
	status, body := adminCall(r.t, w.procs[2], http.MethodPost, "/admin/v1/keys",
		`{"companyId":"`+r.co+`","mode":"LIVE","scopes":["clients:read"],"name":"created in sync, admin API"}`)
	if status != http.StatusCreated {
		r.t.Fatalf("create through the admin API, replica in sync: %d %s", status, body)
	}
	w.viaAdmin.Key = secretIn(r.t, body)
	r.sure("keys", "revoke", w.revoked.ID)
	if err := json.Unmarshal([]byte(r.sure("keys", "roll", w.rolled.ID, "--json")), &w.successor); err != nil || w.successor.Key == "" {
		r.t.Fatalf("roll: %v %+v", err, w.successor)
	}
	r.sure("limits", "set", "--company", r.co, "--mode", "LIVE", "--rps", "7", "--burst", "9")
	r.sure("limits", "set", "--company", gendata.DemoCompanyB, "--rps", "3", "--burst", "4")
	r.sure("webhooks", "update", w.epUpdated.ID, "--description", "changed in sync")
	r.sure("webhooks", "rotate-secret", w.epRotated.ID)
	r.sure("webhooks", "delete", w.epDeleted.ID)
	w.endpointsDone = r.endpoints()
}

// lagging makes every change again with the replica held back: each is
// refused as unconfirmed.
func (w *failoverWorld) lagging() {
	r := w.r
	for _, args := range [][]string{
		{"keys", "revoke", w.lagRevoked.ID},
		{"keys", "create", "--company", r.co, "--mode", "LIVE", "--scopes", "clients:read", "--name", "created lagging"},
		{"keys", "roll", w.lagRolled.ID},
		{"limits", "set", "--company", r.co, "--mode", "TEST", "--rps", "5", "--burst", "6"},
		{"limits", "reset", "--company", gendata.DemoCompanyB},
		{"webhooks", "create", "--company", r.co, "--mode", "LIVE", "--url", "http://127.0.0.1:9/created-lagging", "--description", "created lagging"},
		{"webhooks", "update", w.lagUpdated.ID, "--description", "changed lagging"},
		{"webhooks", "rotate-secret", w.lagRotated.ID},
		{"webhooks", "delete", w.lagDeleted.ID},
	} {
		r.refused(args...)
	}
	if status, body := adminCall(r.t, w.procs[1], http.MethodDelete, "/admin/v1/keys/"+w.lagAdminRevoked.ID, ""); status != http.StatusServiceUnavailable ||
		!strings.Contains(body, `"change_not_replicated"`) {
		r.t.Errorf("revoke through the admin API, replica lagging: %d %s; want 503 change_not_replicated", status, body)
	}
}

// confirmedKept checks, after the promotion, every change answered done:
// on every instance (the three that ran through the failover and one
// started after it) for keys and limits, through the command line for
// endpoints.
func (w *failoverWorld) confirmedKept() {
	r := w.r
	for i, p := range w.procs {
		if got := r.answer(p, w.revoked.Key); got != http.StatusUnauthorized {
			r.t.Errorf("instance %d: the key revoked in sync answered %d after the failover, want 401", i+1, got)
		}
		r.becomes(p, w.created.Key, http.StatusOK, "the key created in sync")
		r.becomes(p, w.viaAdmin.Key, http.StatusOK, "the key created in sync through the admin API")
		r.becomes(p, w.rolled.Key, http.StatusOK, "the key rolled in sync, in its overlap")
		r.becomes(p, w.successor.Key, http.StatusOK, "the successor of the key rolled in sync")
		r.policyBecomes(p, w.created.Key, `"live";q=9;w=2`)
	}
	states := r.keyStates()
	for what, want := range map[string]string{w.revoked.ID: "revoked", w.rolled.ID: "active, rolled to " + w.successor.ID, w.successor.ID: "active", w.created.ID: "active"} {
		if states[what] != want {
			r.t.Errorf("key %s after the failover: %q, want %q", what, states[what], want)
		}
	}
	if got := r.limit(); got != "7/9" {
		r.t.Errorf("the LIVE limit set in sync, after the failover: %s", got)
	}
	eps := r.endpoints()
	for _, id := range []string{w.epCreated.ID, w.epUpdated.ID, w.epRotated.ID, w.epDeleted.ID} {
		if eps[id] != w.endpointsDone[id] {
			r.t.Errorf("endpoint %s after the failover: %q, want %q as answered in sync", id, eps[id], w.endpointsDone[id])
		}
	}
	audited := r.audited()
	for _, want := range []string{"key.revoked " + w.revoked.ID, "key.rolled " + w.rolled.ID, "limits.set ", "webhook.updated " + w.epUpdated.ID,
		"webhook.secret_rotated " + w.epRotated.ID, "webhook.deleted " + w.epDeleted.ID} {
		if audited[want] == 0 {
			r.t.Errorf("the audit log after the failover lacks %s, answered done in sync", want)
		}
	}
}

// audited counts co's audit events by "action id" (the key's or the
// endpoint's).
func (r *rig) audited() map[string]int {
	r.t.Helper()
	var a struct {
		Events []struct{ Action, KeyID, WebhookID string } `json:"data"`
	}
	r.json(&a, "audit", "--company", r.co)
	m := map[string]int{}
	for _, e := range a.Events {
		m[e.Action+" "+e.KeyID+e.WebhookID]++
	}
	return m
}

// unconfirmedFates says what became of the changes refused while the
// replica lagged. Either is allowed; the failover here loses what the
// master had not sent, so the revocations must be lost: the fault the
// refusals were right about.
func (w *failoverWorld) unconfirmedFates() {
	r := w.r
	states, eps := r.keyStates(), r.endpoints()
	for _, k := range []made{w.lagRevoked, w.lagAdminRevoked} {
		if states[k.ID] != "active" {
			r.t.Errorf("a revocation refused while the replica lagged is %q after the failover: the test lost nothing", states[k.ID])
		}
	}
	r.t.Logf("after the failover, the changes refused while the replica lagged: revocations lost (%s, %s), roll %s, endpoints %v",
		states[w.lagRevoked.ID], states[w.lagAdminRevoked.ID], states[w.lagRolled.ID], eps)
}

// lendpoint creates a LIVE endpoint of co that nothing is delivered to.
func (r *rig) lendpoint(description string) made {
	r.t.Helper()
	var e made
	r.json(&e, "webhooks", "create", "--company", r.co, "--mode", "LIVE", "--url", "http://127.0.0.1:9/"+strings.ReplaceAll(description, " ", "-"), "--description", description)
	return e
}

// sure runs a change until it is done: one reported unconfirmed (the
// replica slow on a busy machine) is repeated, as operators are told to.
func (r *rig) sure(args ...string) string {
	r.t.Helper()
	for range 5 {
		code, out, errs := r.gw(args...)
		if code == 0 {
			return out
		}
		if !strings.Contains(errs, "once Redis is healthy") {
			r.t.Fatalf("%v: exit %d\n%s%s", args, code, out, errs)
		}
	}
	r.t.Fatalf("%v: never confirmed with the replica in sync", args)
	return ""
}

var secretShaped = regexp.MustCompile(`igw_live_[0-9A-Za-z]{8}|whsec_`)

// refused runs a change that Redis's replicas cannot confirm: exit 1,
// nothing on stdout (no secret, no "done"), one sentence saying to repeat
// it once Redis is healthy.
func (r *rig) refused(args ...string) {
	r.t.Helper()
	code, out, errs := r.gw(args...)
	said := strings.TrimPrefix(strings.TrimSpace(errs), "gateway: ")
	if code != 1 || out != "" || strings.Contains(said, "\n") || !strings.Contains(said, "once Redis is healthy") || secretShaped.MatchString(errs) {
		r.t.Errorf("%v, unconfirmable: exit %d, stdout %q, stderr %q; want exit 1 and one sentence saying to repeat it once Redis is healthy", args, code, out, errs)
	}
}

// adminCall sends an admin API request to p as the platform team does.
func adminCall(t *testing.T, p *process, method, path, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, p.admin+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+faultsAdminToken)
	req.Header.Set("X-Actor", "ana@platform")
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// secretIn is the secret of the key an admin API creation answered.
func secretIn(t *testing.T, body string) string {
	t.Helper()
	var k struct{ Key string }
	if err := json.Unmarshal([]byte(body), &k); err != nil || k.Key == "" {
		t.Fatalf("no key in %s: %v", body, err)
	}
	return k.Key
}

// TestReplicaDownWithoutFailover: the replica of a Sentinel deployment goes
// away (its link cut) and the master stays. The gateway keeps waiting for a
// replica, so every change is refused as unconfirmed, never answered done
// without one: a revocation is in effect at once all the same (the master
// has it), other changes may or may not have applied. Keys keep verifying.
// Once the replica is back and in sync, each change repeated is done.
func TestReplicaDownWithoutFailover(t *testing.T) {
	t.Parallel()
	rr := testenv.RedisReplicated(t)
	r := newRig(t, "redis+sentinel://"+rr.Sentinel+"/0?master_name="+rr.Name)
	p := r.serve()
	kept, revoked := r.key("kept"), r.key("revoked while the replica is down")
	r.becomes(p, kept.Key, http.StatusOK, "a key, replica up")

	rr.Link.Cut()
	master := rr.Direct(rr.Master)
	testenv.Eventually(t, "the master to see its replica gone", func() error {
		info := master.Info(context.Background(), "replication").Val()
		return testenv.Want(strings.Contains(info, "connected_slaves:0\r\n"), true, info)
	})
	changes := [][]string{
		{"keys", "revoke", revoked.ID},
		{"limits", "set", "--company", r.co, "--mode", "LIVE", "--rps", "7", "--burst", "9"},
		{"webhooks", "create", "--company", r.co, "--mode", "LIVE", "--url", "http://127.0.0.1:9/replica-down"},
	}
	before := r.endpoints()
	for _, args := range changes {
		r.refused(args...)
	}
	if got := r.endpoints(); !maps.Equal(got, before) {
		t.Errorf("an endpoint creation refused as unconfirmed was not taken back: %v, was %v", got, before)
	}
	r.becomes(p, revoked.Key, http.StatusUnauthorized, "a revocation refused as unconfirmed, in effect on the master")
	if got := r.answer(p, kept.Key); got != http.StatusOK {
		t.Errorf("a key, replica down: %d, want 200", got)
	}

	rr.Link.Resume()
	rr.Synced()
	for _, args := range changes {
		r.sure(args...)
	}
	if got := r.limit(); got != "7/9" {
		t.Errorf("the limit, repeated once the replica is back: %s", got)
	}
}
