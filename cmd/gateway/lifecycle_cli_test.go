package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/backend/gendata"
)

// Expiry, networks, rolls and the audit log from the command line, against
// real PostgreSQL and Redis, as docs/operators.md shows them.
func TestKeyLifecycleCommands(t *testing.T) {
	t.Parallel()
	env := cliEnv(t)
	co := gendata.DemoCompanyA
	k := createLimitedKey(t, env, co)
	r := rollTwice(t, env, co, k.ID)
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"keys", "roll", k.ID}, "rolled already"},
		{[]string{"keys", "roll"}, "KEY_ID"},
		{[]string{"keys", "roll", r.ID, "--overlap", "-1s"}, "overlap"},
		{[]string{"keys", "create", "--company", co, "--mode", "LIVE", "--scopes", "clients:read", "--expires-in", "soon"}, "--expires-in"},
		{[]string{"keys", "create", "--company", co, "--mode", "LIVE", "--scopes", "clients:read", "--expires-in", "1h", "--expires-at", "2099-01-01T00:00:00Z"}, "not both"},
		{[]string{"keys", "create", "--company", co, "--mode", "LIVE", "--scopes", "clients:read", "--expires-at", "2001-01-01T00:00:00Z"}, "future"},
		{[]string{"keys", "create", "--company", co, "--mode", "LIVE", "--scopes", "clients:read", "--allow-cidr", "10.0.0.0/33"}, "10.0.0.0/33"},
		{[]string{"audit"}, "--company"},
		{[]string{"audit", "--company", co, "--since", "last tuesday"}, "--since"},
	} {
		if code, _, errs := gw(t, env, bad.args...); code == 0 || !strings.Contains(errs, bad.want) {
			t.Errorf("%v: exit %d, %q; want %q", bad.args, code, errs, bad.want)
		}
	}
	checkLifecycleAudit(t, env, co, r.ID)
}

// createdKey is what the lifecycle test reads of `keys create --json`.
type createdKey struct {
	ID, Key      string
	ExpiresAt    time.Time
	AllowedCIDRs []string `json:"allowedCidrs"`
}

// createLimitedKey creates a LIVE key that expires in 30 days and is
// limited to two networks, and a TEST key that expires at a time.
func createLimitedKey(t *testing.T, env func(string) string, co string) createdKey {
	t.Helper()
	code, out, errs := gw(t, env, "keys", "create", "--company", co, "--mode", "LIVE", "--scopes", "clients:read",
		"--expires-in", "30d", "--allow-cidr", "203.0.113.7/24", "--allow-cidr", "2001:db8::/32", "--json")
	if code != 0 {
		t.Fatalf("create: %d %s", code, errs)
	}
	var k createdKey
	if err := json.Unmarshal([]byte(out), &k); err != nil || k.Key == "" {
		t.Fatalf("create --json: %v %s", err, out)
	}
	if d := time.Until(k.ExpiresAt); d < 29*24*time.Hour || d > 30*24*time.Hour {
		t.Errorf("--expires-in 30d: expires at %v", k.ExpiresAt)
	}
	if strings.Join(k.AllowedCIDRs, " ") != "203.0.113.0/24 2001:db8::/32" {
		t.Errorf("networks: %v", k.AllowedCIDRs)
	}
	code, out, _ = gw(t, env, "keys", "create", "--company", co, "--mode", "TEST", "--scopes", "clients:read", "--expires-at", "2099-01-31T00:00:00Z")
	if code != 0 || !strings.Contains(out, "expiring 2099-01-31T00:00:00Z") {
		t.Errorf("create --expires-at: %d %s", code, out)
	}
	return k
}

// rolledKey is what the lifecycle test reads of `keys roll --json`.
type rolledKey struct {
	ID, Key, Replaces string
	Previous          struct{ ExpiresAt time.Time }
}

// rollTwice rolls the key with an overlap, then its successor without
// one, and lists the company's keys.
func rollTwice(t *testing.T, env func(string) string, co, keyID string) rolledKey {
	t.Helper()
	code, out, errs := gw(t, env, "keys", "roll", keyID, "--overlap", "2h", "--json")
	if code != 0 {
		t.Fatalf("roll: %d %s", code, errs)
	}
	var r rolledKey
	if err := json.Unmarshal([]byte(out), &r); err != nil || r.Replaces != keyID || !strings.HasPrefix(r.Key, "igw_live_") || r.ID == keyID {
		t.Fatalf("roll --json: %v %s", err, out)
	}
	if d := time.Until(r.Previous.ExpiresAt); d < time.Hour || d > 2*time.Hour {
		t.Errorf("old key after a 2h overlap expires at %v", r.Previous.ExpiresAt)
	}
	code, out, _ = gw(t, env, "keys", "roll", r.ID, "--overlap", "0")
	if code != 0 || !strings.Contains(out, "Rolled key "+r.ID) || !strings.Contains(out, "igw_live_") {
		t.Errorf("roll: %d %s", code, out)
	}
	code, out, _ = gw(t, env, "keys", "list", "--company", co)
	if code != 0 || !strings.Contains(out, "EXPIRES") || !strings.Contains(out, "to "+r.ID) || !strings.Contains(out, "from "+keyID) ||
		!strings.Contains(out, "203.0.113.0/24,2001:db8::/32") || !strings.Contains(out, "expired") {
		t.Errorf("list:\n%s", out)
	}
	return r
}

// checkLifecycleAudit checks the audit log of the lifecycle: who did what,
// in order, a roll's change (to rolledID), since a time, and a limit set.
func checkLifecycleAudit(t *testing.T, env func(string) string, co, rolledID string) {
	t.Helper()
	code, out, errs := gw(t, env, "audit", "--company", co, "--json")
	if code != 0 {
		t.Fatalf("audit: %d %s", code, errs)
	}
	var a struct {
		Events []struct{ Actor, Action string } `json:"data"`
	}
	if err := json.Unmarshal([]byte(out), &a); err != nil {
		t.Fatal(err)
	}
	var actions []string
	for _, e := range a.Events {
		actions = append(actions, e.Action)
		if e.Actor != commandActor() && e.Actor != "system" {
			t.Errorf("actor %q, want %q", e.Actor, commandActor())
		}
	}
	want := "key.created key.created key.rolled key.created key.rolled key.created key.expired"
	if strings.Join(actions, " ") != want {
		t.Errorf("audit actions: %v\nwant %s", actions, want)
	}
	code, out, _ = gw(t, env, "audit", "--company", co, "--since", "1h")
	if code != 0 || !strings.Contains(out, "key.rolled") || !strings.Contains(out, "active -> active, replaced by "+rolledID) || !strings.Contains(out, "system") {
		t.Errorf("audit:\n%s", out)
	}
	if code, out, errs := gw(t, env, "audit", "--company", co, "--since", "2099-01-01"); code != 0 || strings.Contains(out, "key.") {
		t.Errorf("audit since 2099: %d %s\n%s", code, errs, out)
	}
	if code, out, _ := gw(t, env, "limits", "set", "--company", co, "--rps", "3", "--burst", "4"); code != 0 {
		t.Fatalf("limits set: %s", out)
	}
	if _, out, _ := gw(t, env, "audit", "--company", co, "--since", "1h"); !strings.Contains(out, "limits.set") || !strings.Contains(out, "LIVE 50/s burst 100 (default) -> 3/s burst 4") {
		t.Errorf("limits in the audit:\n%s", out)
	}
}
