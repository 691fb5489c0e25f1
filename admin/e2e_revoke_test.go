package admin_test

import (
	"strings"
	"testing"

	"github.com/invoicing-ao/gateway/invoicing"
)

// Revoking the key a roll made revokes the key it replaced while that one
// still works (its overlap), says so, and records each revocation; with
// keepPrevious=true the old key works on and the answer names it and its
// end. Revoking the old key only ends its overlap.
func TestRevokeRolledKey(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	in := w.start()
	roll := func(id string) string {
		t.Helper()
		r := in.adminCall(t, req{Method: "POST", Path: "/admin/v1/keys/" + id + "/roll", Body: `{"overlapSeconds":86400}`})
		if r.Status != 201 {
			t.Fatalf("roll: %d %s", r.Status, r.Body)
		}
		return r.json(t)["id"].(string)
	}
	state := func(id string) string {
		return in.adminCall(t, req{Path: "/admin/v1/keys/" + id}).json(t)["state"].(string)
	}
	ids := func(v any) []string {
		var out []string
		for _, k := range v.([]any) {
			out = append(out, k.(map[string]any)["id"].(string))
		}
		return out
	}

	old := in.key(t, coA, invoicing.Live, allScopes)
	successor := roll(old.ID)
	r := in.adminCall(t, req{Method: "DELETE", Path: "/admin/v1/keys/" + successor, Header: byActor("carla@dashboard")})
	v := r.json(t)
	if r.Status != 200 || v["state"] != "revoked" || strings.Join(ids(v["alsoRevoked"]), ",") != old.ID || len(ids(v["stillActive"])) != 0 {
		t.Fatalf("revoking the successor: %d %s", r.Status, r.Body)
	}
	if s := state(old.ID); s != "revoked" {
		t.Errorf("the key it replaced is %s, want revoked with it", s)
	}
	expectProblem(t, do(t, in.pub.URL, req{Path: "/api/v1/v1/clients", Key: old.Key, Company: coA}), 401, "invalid_api_key")
	audit := in.adminCall(t, req{Path: "/admin/v1/companies/" + coA + "/audit"}).json(t)["data"].([]any)
	var revoked []string
	for _, e := range audit {
		if m := e.(map[string]any); m["action"] == "key.revoked" && m["actor"] == "carla@dashboard" {
			revoked = append(revoked, m["keyId"].(string))
		}
	}
	if strings.Join(revoked, ",") != successor+","+old.ID {
		t.Errorf("key.revoked events by carla: %v, want the successor's then the old key's", revoked)
	}

	// Kept: the old key works on, named with its end.
	kept := in.key(t, coA, invoicing.Live, allScopes)
	next := roll(kept.ID)
	v = in.adminCall(t, req{Method: "DELETE", Path: "/admin/v1/keys/" + next + "?keepPrevious=true"}).json(t)
	still, _ := v["stillActive"].([]any)
	if len(ids(v["alsoRevoked"])) != 0 || len(still) != 1 || still[0].(map[string]any)["id"] != kept.ID || still[0].(map[string]any)["expiresAt"] == nil {
		t.Fatalf("revoking keeping the old key: %v", v)
	}
	if r := do(t, in.pub.URL, req{Path: "/api/v1/v1/clients?pageSize=1", Key: kept.Key, Company: coA}); r.Status != 200 || state(kept.ID) != "active" {
		t.Errorf("the kept key: %d, %s", r.Status, state(kept.ID))
	}

	// The old key revoked: its successor is untouched.
	first := in.key(t, coA, invoicing.Live, allScopes)
	second := roll(first.ID)
	in.adminCall(t, req{Method: "DELETE", Path: "/admin/v1/keys/" + first.ID})
	if s := state(second); s != "active" {
		t.Errorf("revoking the old key made its successor %s", s)
	}
	expectProblem(t, in.adminCall(t, req{Method: "DELETE", Path: "/admin/v1/keys/" + second + "?keepPrevious=yes"}), 400, "invalid_parameter")
	if s := state(second); s != "active" {
		t.Errorf("a refused revocation made the key %s", s)
	}
}
