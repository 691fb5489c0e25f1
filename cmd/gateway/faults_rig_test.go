package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"testing"

	"github.com/invoicing-ao/gateway/backend/gendata"
	"github.com/invoicing-ao/gateway/internal/testenv"
)

// The fault tests (faults_*_test.go) run the gateway as operators do, the
// built binary on the shipped configuration file, and break its Redis as
// production breaks it. docs/operators.md's table "What survives what"
// names each of them; TestFaultTableNamesItsTests holds the two together.

// faultsAdminToken is the admin token of the fault tests' gateways: random,
// as a deployment's is.
const faultsAdminToken = "3b7e91c04fa2d8653e0c17b9a4f2d6e8c5013a9f7b2e4d60"

// rig is one deployment: `gateway serve` processes and the command line on
// one Redis, the shipped configuration file, and only what every deployment
// sets beside it (Redis's URL, the databases, the admin token, the webhook
// secrets key), plus free ports and deliveries allowed to this machine's
// receivers. The databases hold the small demo data; co is its first
// company.
type rig struct {
	t   *testing.T
	bin string
	env []string
	co  string
}

func newRig(t *testing.T, redisURL string, extra ...string) *rig {
	t.Helper()
	live, test := testenv.Postgres(t), testenv.Postgres(t)
	if _, err := gendata.SetUpSmall(context.Background(), live, test, 3); err != nil {
		t.Fatal(err)
	}
	env := append([]string{
		"GATEWAY_REDIS_URL=" + redisURL,
		"GATEWAY_LIVE_DATABASE_URL=" + live, "GATEWAY_TEST_DATABASE_URL=" + test,
		"GATEWAY_HISTORY_DATABASE_URL=" + testenv.Postgres(t),
		"GATEWAY_ADMIN_TOKEN=" + faultsAdminToken,
		"GATEWAY_ADDR=127.0.0.1:0", "GATEWAY_ADMIN_ADDR=127.0.0.1:0", "GATEWAY_DRAIN_DELAY=0s",
		"GATEWAY_EVENTS_ALLOW_HTTP=true", "GATEWAY_EVENTS_ALLOWED_NETWORKS=127.0.0.0/8",
	}, extra...)
	return &rig{t: t, bin: buildBinary(t), env: withSecretsKey(env), co: gendata.DemoCompanyA}
}

// serve starts a `gateway serve` process, with extra settings.
func (r *rig) serve(extra ...string) *process {
	r.t.Helper()
	return startProcess(r.t, r.bin, append(append([]string{}, r.env...), extra...))
}

// gw runs a command of the binary; it returns the exit code, stdout and
// stderr.
func (r *rig) gw(args ...string) (int, string, string) {
	r.t.Helper()
	cmd := exec.Command(r.bin, append(args, "--config", "../../configs/gateway.yaml")...)
	cmd.Env = append(os.Environ(), r.env...)
	var out, errs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errs
	err := cmd.Run()
	code := 0
	if err != nil {
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			r.t.Fatalf("%v: %v", args, err)
		}
		code = exit.ExitCode()
	}
	return code, out.String(), errs.String()
}

// ok runs a command that must succeed and returns its stdout.
func (r *rig) ok(args ...string) string {
	r.t.Helper()
	code, out, errs := r.gw(args...)
	if code != 0 {
		r.t.Fatalf("%v: exit %d\n%s%s", args, code, out, errs)
	}
	return out
}

// json runs a command with --json that must succeed and decodes its answer.
func (r *rig) json(v any, args ...string) {
	r.t.Helper()
	out := r.ok(append(args, "--json")...)
	if err := json.Unmarshal([]byte(out), v); err != nil {
		r.t.Fatalf("%v: %v\n%s", args, err, out)
	}
}

// made is what a creation answers: the id and, once, the secret.
type made struct{ ID, Key, Secret string }

// key creates a LIVE key of co.
func (r *rig) key(name string) made {
	r.t.Helper()
	var k made
	r.json(&k, "keys", "create", "--company", r.co, "--mode", "LIVE", "--scopes", "clients:read", "--name", name)
	return k
}

// endpoint creates a TEST endpoint of co to url: `gateway events trigger`
// changes the sandbox.
func (r *rig) endpoint(url, description string) made {
	r.t.Helper()
	var e made
	r.json(&e, "webhooks", "create", "--company", r.co, "--mode", "TEST", "--url", url, "--description", description)
	return e
}

// keyStates is co's keys, id → state (and "rolled to ID" for a key
// rolled), as `keys list` shows them.
func (r *rig) keyStates() map[string]string {
	r.t.Helper()
	var keys []struct {
		ID, State  string
		ReplacedBy *string
	}
	r.json(&keys, "keys", "list", "--company", r.co)
	m := map[string]string{}
	for _, k := range keys {
		m[k.ID] = k.State
		if k.ReplacedBy != nil {
			m[k.ID] += ", rolled to " + *k.ReplacedBy
		}
	}
	return m
}

// endpoints is co's endpoints, id → "description (secret of TIME)", as
// `webhooks list` shows them.
func (r *rig) endpoints() map[string]string {
	r.t.Helper()
	var eps []struct{ ID, Description, SecretRotatedAt string }
	r.json(&eps, "webhooks", "list", "--company", r.co)
	m := map[string]string{}
	for _, e := range eps {
		m[e.ID] = e.Description + " (secret of " + e.SecretRotatedAt + ")"
	}
	return m
}

// limit is co's LIVE limit as `limits get` shows it: "rate/burst".
func (r *rig) limit() string {
	r.t.Helper()
	var l struct {
		Live struct {
			Rate  float64
			Burst int
		}
	}
	r.json(&l, "limits", "get", "--company", r.co)
	return fmt.Sprintf("%g/%d", l.Live.Rate, l.Live.Burst)
}

var triggered = regexp.MustCompile(`^Made an? (\S+) change in the sandbox \([^)]*\): ([0-9a-f-]{36})\. `)

// trigger makes a change of typ to co in the sandbox (`gateway events
// trigger`) and returns "type id", the change an event must report.
func (r *rig) trigger(typ string) string {
	r.t.Helper()
	out := r.ok("events", "trigger", typ, "--company", r.co)
	m := triggered.FindStringSubmatch(out)
	if m == nil || m[1] != typ {
		r.t.Fatalf("trigger %s: %q", typ, out)
	}
	return typ + " " + m[2]
}

// answer is the status of p's public API to a request with secret,
// waiting past 503s (Redis not reached yet, or the key not verifiable
// while it is down): 200 means the key works, 401 that it is refused.
func (r *rig) answer(p *process, secret string) int {
	r.t.Helper()
	status, _ := r.ask(p, secret)
	return status
}

// ask is answer with the RateLimit-Policy of the answer.
func (r *rig) ask(p *process, secret string) (status int, policy string) {
	r.t.Helper()
	testenv.Eventually(r.t, "an answer other than 503", func() error {
		req, _ := http.NewRequest(http.MethodGet, p.pub+"/api/v1/v1/clients?pageSize=1", nil)
		req.Header.Set("Authorization", "Bearer "+secret)
		req.Header.Set("X-Company-Id", r.co)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		res.Body.Close()
		status, policy = res.StatusCode, res.Header.Get("RateLimit-Policy")
		return testenv.Want(status != http.StatusServiceUnavailable, true, res.Status)
	})
	return status, policy
}

// becomes waits until p answers want to secret, as a change reaches every
// instance within a second (its key cache), or fails saying what.
func (r *rig) becomes(p *process, secret string, want int, what string) {
	r.t.Helper()
	testenv.Eventually(r.t, what, func() error { return testenv.Want(r.answer(p, secret), want, "answered") })
}

// policyBecomes waits until p's answers to secret carry RateLimit-Policy
// want: a limit reaches every instance within a second.
func (r *rig) policyBecomes(p *process, secret, want string) {
	r.t.Helper()
	testenv.Eventually(r.t, "RateLimit-Policy "+want, func() error {
		_, got := r.ask(p, secret)
		return testenv.Want(got, want, "RateLimit-Policy")
	})
}
