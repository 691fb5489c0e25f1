package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/invoicing-ao/gateway/backend/gendata"
	"github.com/invoicing-ao/gateway/cmd/gateway/internal/config"
	"github.com/invoicing-ao/gateway/internal/seal"
	"github.com/invoicing-ao/gateway/internal/testenv"
)

// testSecretsKey seals the webhook signing secrets of the tests' gateways.
var testSecretsKey = func() string {
	id, _, err := seal.Generate()
	if err != nil {
		panic(err)
	}
	return id
}()

// stateEnv is a Redis-only configuration on this test's own prefix.
func stateEnv(t *testing.T) (func(string) string, func()) {
	t.Helper()
	rdb, prefix := testenv.Redis(t)
	env := envOf(map[string]string{"GATEWAY_REDIS_URL": testenv.RedisURL(), "GATEWAY_REDIS_PREFIX": prefix,
		"GATEWAY_WEBHOOK_SECRETS_KEY": testSecretsKey, "GATEWAY_HISTORY_DATABASE_URL": "sqlite:" + filepath.Join(t.TempDir(), "gateway.db")})
	return env, func() { testenv.DeletePrefix(t, rdb, prefix) }
}

// The commands as an operator runs them: a plain export says it is not
// encrypted, and is mode 0600; a key made by keygen (mode 0600, never
// replaced) encrypts an export that only its identity opens; after a loss,
// the import puts the limit back, and a second import changes nothing.
func TestStateCommands(t *testing.T) {
	t.Parallel()
	env, lose := stateEnv(t)
	dir := t.TempDir()
	co := gendata.DemoCompanyA
	if code, _, errs := gw(t, env, "limits", "set", "--company", co, "--mode", "LIVE", "--rps", "42", "--burst", "84"); code != 0 {
		t.Fatalf("limits set: %s", errs)
	}
	plain := filepath.Join(dir, "plain.gwstate")
	code, out, errs := gw(t, env, "state", "export", "--out", plain)
	if code != 0 || !strings.Contains(out, "the limits of 1 company and") || !strings.Contains(errs, "WARNING") || !strings.Contains(errs, "not encrypted") {
		t.Fatalf("plain export: %d\n%s\n%s", code, out, errs)
	}
	if fi, err := os.Stat(plain); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("export's mode: %v %v", fi.Mode(), err)
	}

	key := filepath.Join(dir, "control-plane.key")
	code, out, errs = gwNoConfig(env, "state", "keygen", "--out", key)
	if fi, err := os.Stat(key); code != 0 || err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("keygen: %d %s %v", code, errs, err)
	}
	recipient := strings.TrimSpace(out[strings.LastIndex(strings.TrimSpace(out), "\n")+1:])
	if code, _, errs = gwNoConfig(env, "state", "keygen", "--out", key); code != 1 || !strings.Contains(errs, "exists") {
		t.Fatalf("keygen over an existing key: %d %s", code, errs)
	}
	enc := filepath.Join(dir, "enc.gwstate")
	if code, _, errs = gw(t, env, "state", "export", "--out", enc, "--recipient", recipient); code != 0 || strings.Contains(errs, "WARNING") {
		t.Fatalf("encrypted export: %d %s", code, errs)
	}
	if b, _ := os.ReadFile(enc); strings.Contains(string(b), "live_rate") || !strings.HasPrefix(string(b), "invoicing-gateway-state 3 age\n") {
		t.Fatal("the encrypted export shows its content")
	}

	lose()
	if code, _, errs = gw(t, env, "state", "import", enc); code != 1 || !strings.Contains(errs, "encrypted") || !strings.Contains(errs, "nothing was imported") {
		t.Fatalf("import without the identity: %d %s", code, errs)
	}
	code, out, errs = gw(t, env, "state", "import", enc, "--identity", key)
	if code != 0 || !strings.Contains(out, "limits    1 added") {
		t.Fatalf("import: %d\n%s\n%s", code, out, errs)
	}
	if code, out, _ = gw(t, env, "limits", "get", "--company", co); code != 0 || !strings.Contains(out, "42") {
		t.Fatalf("the limit after the import: %s", out)
	}
	if code, out, _ = gw(t, env, "state", "import", plain); code != 0 || !strings.Contains(out, "limits    0 added, 0 updated, 1 unchanged") {
		t.Fatalf("second import: %d %s", code, out)
	}
}

// gwNoConfig runs a command that reads no configuration.
func gwNoConfig(env func(string) string, args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(context.Background(), args, &out, &errb, env)
	return code, out.String(), errb.String()
}

// Without a key for webhook signing secrets, serve refuses to start, saying
// how to make one; plain text is a choice that must be named, and excludes a
// key; a key that is not one is refused without being repeated.
func TestWebhookSecretsKeySetting(t *testing.T) {
	t.Parallel()
	base := map[string]string{"GATEWAY_LIVE_DATABASE_URL": "sqlite:/tmp/l.db", "GATEWAY_TEST_DATABASE_URL": "sqlite:/tmp/t.db", "GATEWAY_HISTORY_DATABASE_URL": "sqlite:/tmp/g.db"}
	with := func(kv ...string) func(string) string {
		m := map[string]string{"GATEWAY_WEBHOOK_SECRETS_KEY": ""}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return envOf(m)
	}
	for _, c := range []struct {
		env  func(string) string
		want string // "" loads
	}{
		{with(), "gateway state keygen"},
		{with("GATEWAY_WEBHOOK_SECRETS_PLAINTEXT", "true"), ""},
		{with("GATEWAY_WEBHOOK_SECRETS_KEY", testSecretsKey), ""},
		{with("GATEWAY_WEBHOOK_SECRETS_KEY", testSecretsKey, "GATEWAY_WEBHOOK_SECRETS_PLAINTEXT", "true"), "GATEWAY_WEBHOOK_SECRETS_PLAINTEXT"},
		{with("GATEWAY_WEBHOOK_SECRETS_KEY", "AGE-SECRET-KEY-1NOTAKEYATALL"), "GATEWAY_WEBHOOK_SECRETS_KEY"},
		{with("GATEWAY_WEBHOOK_SECRETS_OLD_KEYS", testSecretsKey), "needs webhookSecretsKey"},
	} {
		_, err := config.Load("", c.env, config.NeedAll)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("refused: %v", err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%v, want an error naming %q", err, c.want)
		case err != nil && strings.Contains(err.Error(), "NOTAKEYATALL"):
			t.Errorf("the error repeats the key: %v", err)
		}
	}
	// A command that neither makes nor uses secrets needs no key.
	if _, err := config.Load("", with(), config.NeedRedis); err != nil {
		t.Errorf("keys list's configuration: %v", err)
	}
}
