package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/invoicing-ao/gateway/backend/gendata"
	"github.com/invoicing-ao/gateway/internal/testenv"
)

// cliEnv is a configuration, by environment, pointing at this test's own
// databases and Redis prefix on the real services.
func cliEnv(t *testing.T) func(string) string {
	t.Helper()
	ctx := context.Background()
	live, test := testenv.Postgres(t), testenv.Postgres(t)
	if _, err := gendata.SetUpSmall(ctx, live, test, 3); err != nil {
		t.Fatal(err)
	}
	_, prefix := testenv.Redis(t)
	return envOf(map[string]string{
		"GATEWAY_REDIS_URL":            testenv.RedisURL(),
		"GATEWAY_REDIS_PREFIX":         prefix,
		"GATEWAY_LIVE_DATABASE_URL":    live,
		"GATEWAY_TEST_DATABASE_URL":    test,
		"GATEWAY_HISTORY_DATABASE_URL": testenv.Postgres(t),
		"GATEWAY_WEBHOOK_SECRETS_KEY":  testSecretsKey,
	})
}

// gw runs the command line and returns exit code, stdout and stderr.
func gw(t *testing.T, env func(string) string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), append(args, "--config", "../../configs/gateway.yaml"), &out, &errb, env)
	return code, out.String(), errb.String()
}

func TestKeysCommands(t *testing.T) {
	t.Parallel()
	env := cliEnv(t)
	code, out, errs := gw(t, env, "keys", "create", "--company", gendata.DemoCompanyA, "--mode", "LIVE",
		"--scopes", "invoices:read,clients:read", "--name", "erp", "--json")
	if code != 0 {
		t.Fatalf("create: %d %s", code, errs)
	}
	var created struct{ ID, Key, Mode, Hint string }
	if err := json.Unmarshal([]byte(out), &created); err != nil || created.ID == "" || !strings.HasPrefix(created.Key, "igw_live_") {
		t.Fatalf("create --json: %v %s", err, out)
	}
	code, out, _ = gw(t, env, "keys", "list", "--company", gendata.DemoCompanyA)
	if code != 0 || !strings.Contains(out, created.ID) || strings.Contains(out, created.Key) || !strings.Contains(out, created.Hint) {
		t.Fatalf("list: %d\n%s", code, out)
	}
	code, out, _ = gw(t, env, "keys", "list", "--company", gendata.DemoCompanyA, "--json")
	if code != 0 || strings.Contains(out, created.Key) || strings.Contains(out, `"key"`) {
		t.Fatalf("list --json shows a secret: %s", out)
	}
	if code, _, errs = gw(t, env, "keys", "revoke", created.ID); code != 0 {
		t.Fatalf("revoke: %d %s", code, errs)
	}
	_, out, _ = gw(t, env, "keys", "list", "--company", gendata.DemoCompanyA, "--json")
	if !strings.Contains(out, `"state":"revoked"`) {
		t.Fatalf("revoked key not shown as revoked: %s", out)
	}

	refusals := []struct {
		args []string
		want string
	}{
		{[]string{"keys", "create", "--company", "00000000-0000-4000-8000-0000000000aa", "--mode", "LIVE", "--scopes", "clients:read"}, "No company"},
		{[]string{"keys", "create", "--company", gendata.DemoCompanyA, "--mode", "LIVE", "--scopes", "clients:delete"}, `--scopes "clients:delete": must be among invoices:read, clients:read, clients:write, events:read: "clients:delete" is not a scope`},
		{[]string{"keys", "create", "--company", gendata.DemoCompanyA, "--mode", "LIVE", "--scopes", "clients:read", "--allow-cidr", "300.1.1.1/8"}, `--allow-cidr: must be CIDRs or addresses: "300.1.1.1/8" is not a CIDR`},
		{[]string{"keys", "create", "--company", gendata.DemoCompanyA, "--mode", "PROD", "--scopes", "clients:read"}, "LIVE or TEST"},
		{[]string{"keys", "create", "--company", gendata.DemoCompanyA}, "--mode"},
		{[]string{"keys", "revoke"}, "KEY_ID"},
		{[]string{"keys", "revoke", "key_doesnotexist"}, "gateway: No API key key_doesnotexist exists."},
		{[]string{"keys", "roll", "key_doesnotexist"}, "gateway: No API key key_doesnotexist exists."},
	}
	for _, r := range refusals {
		code, _, errs := gw(t, env, r.args...)
		if code == 0 || !strings.Contains(errs, r.want) {
			t.Errorf("%v: exit %d, stderr %q, want non-zero and %q", r.args, code, errs, r.want)
		}
	}
	// The 11th active key is refused; one was revoked above, so make 10 more.
	for i := 0; i < 10; i++ {
		if code, _, errs := gw(t, env, "keys", "create", "--company", gendata.DemoCompanyB, "--mode", "TEST", "--scopes", "clients:read"); code != 0 {
			t.Fatalf("key %d: %s", i+1, errs)
		}
	}
	code, _, errs = gw(t, env, "keys", "create", "--company", gendata.DemoCompanyB, "--mode", "TEST", "--scopes", "clients:read")
	if code == 0 || !strings.Contains(errs, "maximum") {
		t.Fatalf("11th key: exit %d %q", code, errs)
	}
}

func TestLimitsCommands(t *testing.T) {
	t.Parallel()
	env := cliEnv(t)
	co := gendata.DemoCompanyA
	code, out, errs := gw(t, env, "limits", "get", "--company", co)
	if code != 0 || !strings.Contains(out, "LIVE  50 rps, burst 100 (default)") {
		t.Fatalf("get: %d %q %s", code, out, errs)
	}
	if code, _, errs := gw(t, env, "limits", "set", "--company", co, "--mode", "TEST", "--rate", "2.5", "--burst", "5"); code != 0 {
		t.Fatalf("set: %s", errs)
	}
	_, out, _ = gw(t, env, "limits", "get", "--company", co, "--json")
	var v struct {
		Test struct {
			Rate   float64
			Burst  int
			Custom bool
		}
		Live struct{ Custom bool }
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil || v.Test.Rate != 2.5 || v.Test.Burst != 5 || !v.Test.Custom || v.Live.Custom {
		t.Fatalf("after set: %v %s", err, out)
	}
	if code, _, _ := gw(t, env, "limits", "reset", "--company", co); code != 0 {
		t.Fatal("reset failed")
	}
	_, out, _ = gw(t, env, "limits", "get", "--company", co)
	if !strings.Contains(out, "TEST  10 rps, burst 20 (default)") {
		t.Fatalf("after reset: %s", out)
	}
	// A limit out of bounds is refused naming its flag, in the flag's words.
	for _, bad := range []struct{ rate, burst, want string }{
		{"0", "1", "gateway limits set: --rate 0: must be from 0.001 to 100000 requests per second\n"},
		{"1000000", "1", "gateway limits set: --rate 1000000: must be from 0.001 to 100000 requests per second\n"},
		{"5", "0", "gateway limits set: --burst 0: must be a whole number of requests from 1 to 100000\n"},
	} {
		if code, _, errs := gw(t, env, "limits", "set", "--company", co, "--rate", bad.rate, "--burst", bad.burst); code != 2 || !strings.HasPrefix(errs, bad.want) {
			t.Errorf("--rate %s --burst %s: exit %d, %q; want 2 and %q", bad.rate, bad.burst, code, errs, bad.want)
		}
	}
}

func TestUsageAndVersion(t *testing.T) {
	t.Parallel()
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"version"}, &out, &errb, envOf(nil)); code != 0 || !strings.HasPrefix(out.String(), "gateway ") {
		t.Fatalf("version: %d %q", code, out.String())
	}
	if code := run(context.Background(), []string{"frobnicate"}, &out, &errb, envOf(nil)); code != 2 {
		t.Fatalf("unknown command: exit %d", code)
	}
	if code := run(context.Background(), nil, &out, &errb, envOf(nil)); code != 2 {
		t.Fatalf("no command: exit %d", code)
	}
}
