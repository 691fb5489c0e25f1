package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/invoicing-ao/gateway/backend/gendata"
)

// `keys revoke` of the key a roll made says that the key it replaced, which
// still worked, is revoked with it; with --keep-previous, that it still
// works, until when, and how to revoke it.
func TestKeysRevokeRolledCommand(t *testing.T) {
	t.Parallel()
	env := cliEnv(t)
	co := gendata.DemoCompanyA
	made := func() (old, successor string) {
		t.Helper()
		_, out, errs := gw(t, env, "keys", "create", "--company", co, "--mode", "LIVE", "--scopes", "clients:read", "--json")
		var k struct{ ID string }
		if err := json.Unmarshal([]byte(out), &k); err != nil {
			t.Fatalf("create: %v %s %s", err, out, errs)
		}
		_, out, errs = gw(t, env, "keys", "roll", k.ID, "--json")
		var r struct{ ID string }
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("roll: %v %s %s", err, out, errs)
		}
		return k.ID, r.ID
	}
	old, successor := made()
	code, out, errs := gw(t, env, "keys", "revoke", successor)
	if code != 0 || !strings.Contains(out, "Revoked key "+successor) || !strings.Contains(out, "Revoked with it key "+old+" ") {
		t.Errorf("revoke the successor: exit %d\n%s%s", code, out, errs)
	}
	old, successor = made()
	code, out, errs = gw(t, env, "keys", "revoke", successor, "--keep-previous")
	if code != 0 || !strings.Contains(out, "Key "+old+" ") || !strings.Contains(out, "still works until 20") ||
		!strings.Contains(out, "gateway keys revoke "+old) {
		t.Errorf("revoke --keep-previous: exit %d\n%s%s", code, out, errs)
	}
	_, out, _ = gw(t, env, "keys", "list", "--company", co)
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, old) && !strings.Contains(l, "active") {
			t.Errorf("the kept key is not active: %s", l)
		}
	}
}

// An empty list says so in a sentence, naming what it is of, instead of a
// header alone; --json still prints an empty list.
func TestEmptyListsSaySo(t *testing.T) {
	t.Parallel()
	env := cliEnv(t)
	co := gendata.DemoCompanyB
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"keys", "list", "--company", co}, "No keys for company " + co + ".\n"},
		{[]string{"webhooks", "list", "--company", co}, "No webhook endpoints for company " + co + ".\n"},
		{[]string{"audit", "--company", co}, "No changes recorded for company " + co + " in the audit log (kept 400 days).\n"},
		{[]string{"audit", "--company", co, "--since", "2026-01-02"}, "No changes recorded for company " + co + " since 2026-01-02T00:00:00Z.\n"},
	} {
		if code, out, errs := gw(t, env, c.args...); code != 0 || out != c.want {
			t.Errorf("%v: exit %d %q %s, want %q", c.args, code, out, errs, c.want)
		}
	}
	if code, out, _ := gw(t, env, "keys", "list", "--company", co, "--json"); code != 0 || strings.TrimSpace(out) != "[]" {
		t.Errorf("keys list --json: %q", out)
	}
	// An endpoint's empty delivery log, and one that no delivery matches.
	code, _, errs := gw(t, env, "webhooks", "create", "--company", co, "--mode", "TEST", "--url", "https://93.184.216.34/hooks", "--quiet")
	if code != 0 {
		t.Fatalf("webhooks create: %d %s", code, errs)
	}
	_, out, _ := gw(t, env, "webhooks", "list", "--company", co, "--json")
	var eps []struct{ ID string }
	if err := json.Unmarshal([]byte(out), &eps); err != nil || len(eps) != 1 {
		t.Fatalf("webhooks list --json: %v %s", err, out)
	}
	id := eps[0].ID
	if code, out, errs := gw(t, env, "webhooks", "deliveries", id); code != 0 || out != "No deliveries for endpoint "+id+" yet.\n" {
		t.Errorf("deliveries: exit %d %q %s", code, out, errs)
	}
	if code, out, errs := gw(t, env, "webhooks", "deliveries", id, "--state", "failed"); code != 0 || out != "No deliveries of endpoint "+id+" match --state failed.\n" {
		t.Errorf("deliveries --state failed: exit %d %q %s", code, out, errs)
	}
}
