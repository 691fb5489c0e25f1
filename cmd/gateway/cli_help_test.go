package main

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/backend/gendata"
	"github.com/invoicing-ao/gateway/internal/testenv"
)

// runCLI runs a command line in-process, without the --config the other
// tests add. A command that should have failed but serves is stopped after
// a minute.
func runCLI(env func(string) string, args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	code := run(ctx, args, &out, &errb, env)
	return code, out.String(), errb.String()
}

// Every command and subcommand answers -h and --help on stdout with exit 0:
// its usage line, its own flags only (and all of them, but the old names
// kept as aliases), and an example that the command's own parser accepts.
func TestEveryCommandHasHelp(t *testing.T) {
	t.Parallel()
	flagLine := regexp.MustCompile(`(?m)^  --([a-z-]+)`)
	for _, c := range commands {
		fs, _, _ := c.newFlagSet()
		var own []string
		fs.VisitAll(func(f *flag.Flag) {
			if _, alias := c.aliases[f.Name]; !alias {
				own = append(own, f.Name)
			}
		})
		for _, h := range []string{"-h", "--help"} {
			args := append(strings.Fields(c.name), h)
			code, out, errs := runCLI(envOf(nil), args...)
			if code != 0 || errs != "" {
				t.Errorf("%v: exit %d, stderr %q", args, code, errs)
				continue
			}
			if !strings.HasPrefix(out, "Usage: gateway "+c.name) || !strings.Contains(out, "\nExample:\n  gateway "+c.name) {
				t.Errorf("%v: no usage line or example:\n%s", args, out)
			}
			var listed []string
			for _, m := range flagLine.FindAllStringSubmatch(out, -1) {
				listed = append(listed, m[1])
			}
			slices.Sort(listed)
			if !slices.Equal(listed, own) {
				t.Errorf("%v lists flags %v; the command has %v", args, listed, own)
			}
		}
		// The example parses: its flags exist and nothing required is missing.
		words := strings.Fields(c.example)
		ex, _, _ := c.newFlagSet()
		pos, err := parseFlags(ex, words[1+len(strings.Fields(c.name)):])
		if err == nil {
			err = c.check(ex, pos)
		}
		if words[0] != "gateway" || err != nil {
			t.Errorf("%s: example %q does not parse: %v", c.name, c.example, err)
		}
	}
	// Flags a neighbouring subcommand has: none is offered by another.
	for cmd, foreign := range map[string][]string{"keys list": {"mode", "name", "scopes"}, "data schema": {"size", "seed"}, "keys revoke": {"company"}} {
		_, out, _ := runCLI(envOf(nil), append(strings.Fields(cmd), "-h")...)
		for _, f := range foreign {
			if strings.Contains(out, "--"+f+" ") {
				t.Errorf("%s -h offers --%s:\n%s", cmd, f, out)
			}
		}
	}
}

func TestGroupsAndOverview(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}} {
		code, out, _ := runCLI(envOf(nil), args...)
		if code != 0 || !strings.Contains(out, "keys create") || !strings.Contains(out, "data load") {
			t.Errorf("%v: exit %d\n%s", args, code, out)
		}
	}
	if code, out, _ := runCLI(envOf(nil), "help", "keys", "create"); code != 0 || !strings.HasPrefix(out, "Usage: gateway keys create") {
		t.Errorf("help keys create: exit %d\n%s", code, out)
	}
	for _, g := range []string{"keys", "limits", "data"} {
		code, out, errs := runCLI(envOf(nil), g, "--help")
		if code != 0 || errs != "" || !strings.Contains(out, "Usage: gateway "+g+" COMMAND") || strings.Contains(out, "unknown") {
			t.Errorf("%s --help: exit %d %q\n%s", g, code, errs, out)
		}
		for _, c := range commands {
			if strings.HasPrefix(c.name, g+" ") != strings.Contains(out, "  "+c.name+" ") {
				t.Errorf("%s --help and %q:\n%s", g, c.name, out)
			}
		}
		if code, _, errs := runCLI(envOf(nil), g); code != 2 || !strings.Contains(errs, "needs a command") {
			t.Errorf("%s alone: exit %d %q", g, code, errs)
		}
		if code, _, errs := runCLI(envOf(nil), g, "frobnicate"); code != 2 || !strings.Contains(errs, `unknown command "frobnicate"`) {
			t.Errorf("%s frobnicate: exit %d %q", g, code, errs)
		}
	}
}

// A wrong command line exits 2 with the error and one line of usage, and
// nothing else: not the flag list, not the overview.
func TestUsageErrorsAreOneLine(t *testing.T) {
	t.Parallel()
	cases := [][]string{
		{"keys", "create", "--bogus"},
		{"keys", "create", "--company", gendata.DemoCompanyA},
		{"keys", "list", "--mode", "LIVE", "--company", gendata.DemoCompanyA},
		{"keys", "revoke"},
		{"keys", "revoke", "a", "b"},
		{"limits", "set", "--company", gendata.DemoCompanyA, "--rps", "0", "--burst", "1"},
		{"usage"},
		{"data", "schema", "--size", "small"},
		{"probe"},
		{"serve", "extra"},
	}
	for _, args := range cases {
		code, out, errs := runCLI(envOf(nil), args...)
		lines := strings.Split(strings.TrimSuffix(errs, "\n"), "\n")
		name := strings.Join(args[:min(2, len(args))], " ")
		if lookup(args) != nil {
			name = lookup(args).name
		}
		if code != 2 || out != "" || len(lines) != 2 || !strings.HasPrefix(lines[0], "gateway "+name+": ") ||
			!strings.HasPrefix(lines[1], "usage: gateway "+name) {
			t.Errorf("%v: exit %d, stdout %q, stderr:\n%s", args, code, out, errs)
		}
	}
}

// Commands that need only Redis run with no database setting and no
// configuration file, from a directory without one; those that change
// what the audit log records need the gateway's database and no platform
// database, and say so when it is not set.
func TestRedisOnlyCommandsNeedNoDatabase(t *testing.T) {
	_, prefix := testenv.Redis(t)
	redisOnly := map[string]string{"GATEWAY_REDIS_URL": testenv.RedisURL(), "GATEWAY_REDIS_PREFIX": prefix}
	env := envOf(redisOnly)
	withHistory := envOf(map[string]string{"GATEWAY_REDIS_URL": testenv.RedisURL(), "GATEWAY_REDIS_PREFIX": prefix,
		"GATEWAY_HISTORY_DATABASE_URL": "sqlite:" + filepath.Join(t.TempDir(), "gateway.db")})
	t.Chdir(t.TempDir())
	co := gendata.DemoCompanyA
	for _, args := range [][]string{
		{"keys", "list", "--company", co},
		{"limits", "get", "--company", co},
		{"usage", "--company", co},
	} {
		if code, _, errs := runCLI(env, args...); code != 0 {
			t.Errorf("%v: exit %d %s", args, code, errs)
		}
	}
	for _, args := range [][]string{
		{"limits", "set", "--company", co, "--rps", "5", "--burst", "10"},
		{"limits", "reset", "--company", co},
	} {
		if code, _, errs := runCLI(withHistory, args...); code != 0 {
			t.Errorf("%v: exit %d %s", args, code, errs)
		}
		code, _, errs := runCLI(env, args...)
		if code != 1 || !strings.Contains(errs, "GATEWAY_HISTORY_DATABASE_URL (historyDatabaseURL): is required") {
			t.Errorf("%v without the gateway's database: exit %d %s", args, code, errs)
		}
	}
	code, _, errs := runCLI(withHistory, "keys", "revoke", "key_0123456789abcdef")
	if code != 1 || errs != "gateway: No API key key_0123456789abcdef exists.\n" {
		t.Errorf("keys revoke of an unknown key: exit %d %q", code, errs)
	}
	// A command that needs a database says which setting is missing, and
	// where it looked for a configuration file.
	code, _, errs = runCLI(withHistory, "keys", "create", "--company", co, "--mode", "LIVE", "--scopes", "clients:read")
	if code != 1 || !strings.Contains(errs, "GATEWAY_LIVE_DATABASE_URL") || strings.Contains(errs, "GATEWAY_TEST_DATABASE_URL") ||
		!strings.Contains(errs, "GATEWAY_CONFIG is not set") || !strings.Contains(errs, filepath.Join("configs", "gateway.yaml")+" does not exist") {
		t.Errorf("keys create without a database: exit %d\n%s", code, errs)
	}
}

// The configuration file: --config, else $GATEWAY_CONFIG, else
// ./configs/gateway.yaml; the environment wins over each.
func TestConfigSearch(t *testing.T) {
	_, prefix := testenv.Redis(t)
	dir := t.TempDir()
	write := func(name string, rate int) string {
		p := filepath.Join(dir, name)
		body := "redisURL: \"" + testenv.RedisURL() + "\"\nredisPrefix: \"" + prefix + "\"\nliveRate: " + string(rune('0'+rate)) + "\n"
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("configs/gateway.yaml", 3)
	fromEnv := write("env.yaml", 4)
	fromFlag := write("flag.yaml", 5)
	t.Chdir(dir)
	liveRate := func(env map[string]string, extra ...string) string {
		t.Helper()
		code, out, errs := runCLI(envOf(env), append([]string{"limits", "get", "--company", gendata.DemoCompanyA}, extra...)...)
		if code != 0 {
			t.Fatalf("limits get %v: %d %s", extra, code, errs)
		}
		return strings.Fields(out)[1]
	}
	if got := liveRate(nil); got != "3" {
		t.Errorf("./configs/gateway.yaml: LIVE rate %s, want 3", got)
	}
	if got := liveRate(map[string]string{"GATEWAY_CONFIG": fromEnv}); got != "4" {
		t.Errorf("GATEWAY_CONFIG: LIVE rate %s, want 4", got)
	}
	if got := liveRate(map[string]string{"GATEWAY_CONFIG": fromEnv}, "--config", fromFlag); got != "5" {
		t.Errorf("--config over GATEWAY_CONFIG: LIVE rate %s, want 5", got)
	}
	if got := liveRate(map[string]string{"GATEWAY_CONFIG": fromEnv, "GATEWAY_LIVE_RATE": "6"}); got != "6" {
		t.Errorf("the environment over the file: LIVE rate %s, want 6", got)
	}
	code, _, errs := runCLI(envOf(map[string]string{"GATEWAY_CONFIG": filepath.Join(dir, "missing.yaml")}), "limits", "get", "--company", gendata.DemoCompanyA)
	if code != 1 || !strings.Contains(errs, "missing.yaml") {
		t.Errorf("GATEWAY_CONFIG naming no file: exit %d %q", code, errs)
	}
}
