package main

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/backend/gendata"
	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
	"github.com/invoicing-ao/gateway/shape"
)

// offered is a shape.Source of fixed counts: company A's LIVE traffic.
type offered []int

func (o *offered) TakeOffered(yield func(string, invoicing.Mode, int64, int, int, []uint16)) {
	start := time.Now().Truncate(10 * time.Minute).Add(-20 * time.Minute).Unix()
	for i, n := range *o {
		if n > 0 {
			yield(gendata.DemoCompanyA, invoicing.Live, start+int64(i), n, 0, nil)
		}
	}
	*o = nil
}

// limits whatif, shape and headroom on a recording: ten requests a second
// for three minutes, but 100 in one of them, two blocks ago.
func TestLimitsWhatIfCommands(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb, _ := testenv.Redis(t)
	env := cliEnv(t) // the live database knows the companies
	prefix := env("GATEWAY_REDIS_PREFIX")
	t0 := time.Now().Truncate(10 * time.Minute).Add(-20 * time.Minute)
	clock := t0.Add(3 * time.Minute)
	store := shape.New(shape.Config{Redis: rdb, Prefix: prefix + "shape:", Now: func() time.Time { return clock }})
	src := make(offered, 180)
	for i := range src {
		src[i] = 10
	}
	src[60] = 100
	if err := store.Flush(ctx, &src); err != nil {
		t.Fatal(err)
	}
	co := gendata.DemoCompanyA
	code, out, errs := gw(t, env, "limits", "whatif", "--company", co, "--mode", "LIVE", "--rate", "20", "--burst", "40", "--since", "1h")
	for _, want := range []string{
		"1,890 requests offered",
		"with 20 rps, burst 40:",
		"41 refused (2.17 %) in 1 second, 1 minute; worst minute " + t0.Add(time.Minute).UTC().Format("2006-01-02 15:04") + " UTC, 41 refused of 690",
		"in force 50 rps, burst 100 (default):  none refused",
		"smallest burst refusing at most 0.1 % at 20 rps: 80 (1 refused)",
	} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("whatif: exit %d, %q not in\n%s%s", code, want, out, errs)
		}
	}
	code, out, _ = gw(t, env, "limits", "whatif", "--company", co, "--mode", "LIVE", "--rate", "20", "--burst", "40", "--max-refused", "0", "--json")
	var v struct {
		Offered       int64
		Proposed      struct{ Refused int64 }
		SmallestBurst struct{ Burst int }
	}
	if err := json.Unmarshal([]byte(out), &v); code != 0 || err != nil || v.Offered != 1890 || v.Proposed.Refused != 41 || v.SmallestBurst.Burst != 81 {
		t.Errorf("whatif --json: exit %d, %v: %s", code, err, out)
	}
	code, out, _ = gw(t, env, "limits", "shape", "--company", co, "--mode", "LIVE")
	if hour := t0.UTC().Truncate(time.Hour).Format("2006-01-02 15:04"); code != 0 || !strings.Contains(out, hour) || !strings.Contains(out, "limit 50 rps, burst 100 (default)") ||
		!strings.Contains(out, "1,890           180   10   10  100") {
		t.Errorf("shape: exit %d\n%s", code, out)
	}
	// Two minutes after the block's end it is summarized, and ranked.
	clock = t0.Add(12*time.Minute + time.Second)
	if err := store.Flush(ctx, nil); err != nil {
		t.Fatal(err)
	}
	code, out, _ = gw(t, env, "limits", "headroom", "--top", "3")
	if code != 0 || !strings.Contains(out, "LIVE: 1 company with") || !strings.Contains(out, co+"  p99 busy second 10 requests, limit 50 rps (burst 100): 20 % of the rate") {
		t.Errorf("headroom: exit %d\n%s", code, out)
	}
	// Over a week, only the hours with requests are printed.
	code, out, _ = gw(t, env, "limits", "shape", "--company", co, "--mode", "LIVE", "--since", "7d")
	if lines := strings.Count(out, "\n"); code != 0 || lines > 8 || !regexp.MustCompile(`hours without requests left out, of 16[89] from`).MatchString(out) {
		t.Errorf("shape over 7 days: exit %d, %d lines\n%s", code, lines, out)
	}
	// Nothing recorded: one line, no empty table.
	for _, args := range [][]string{
		{"limits", "shape", "--company", co, "--mode", "TEST"},
		{"limits", "whatif", "--company", co, "--mode", "TEST", "--rate", "5", "--burst", "5"},
		{"limits", "headroom", "--mode", "TEST"},
	} {
		if code, out, _ := gw(t, env, args...); code != 0 || strings.Count(out, "\n") != 1 || !strings.Contains(out, "no ") {
			t.Errorf("%v: exit %d\n%s", args, code, out)
		}
	}
	// "The last 30 days", as a duration in days or hours.
	for _, since := range []string{"30d", "720h"} {
		if code, out, errs := gw(t, env, "limits", "whatif", "--company", co, "--mode", "LIVE", "--rate", "20", "--burst", "40", "--since", since); code != 0 || !strings.Contains(out, "1,890 requests offered") {
			t.Errorf("--since %s: exit %d\n%s%s", since, code, out, errs)
		}
	}
}

// Flags out of range exit 2 with the usage, each named in its own unit,
// before Redis is asked (here, a Redis that refuses connections); a company
// the platform does not know is refused, never given an override.
func TestLimitsCommandsRefuseBadFlags(t *testing.T) {
	t.Parallel()
	env := cliEnv(t)
	co := gendata.DemoCompanyA
	down := func(k string) string {
		if k == "GATEWAY_REDIS_URL" {
			return "redis://127.0.0.1:1/0"
		}
		return env(k)
	}
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"limits", "whatif", "--company", co, "--mode", "LIVE", "--rate", "-1", "--burst", "0"}, "--rate -1: must be from 0.001 to 100000 requests per second; --burst 0: must be"},
		{[]string{"limits", "whatif", "--company", co, "--mode", "LIVE", "--rate", "20", "--burst", "40", "--since", "40d"}, `--since "40d": must be within the last 30 days`},
		{[]string{"limits", "whatif", "--company", co, "--mode", "PROD", "--rate", "20", "--burst", "40"}, `--mode "PROD"`},
		{[]string{"limits", "whatif", "--company", co, "--mode", "LIVE", "--rate", "20", "--burst", "40", "--since", "yesterday"}, "--since"},
		{[]string{"limits", "whatif", "--company", co, "--mode", "LIVE", "--rate", "20", "--burst", "40", "--max-refused", "150"}, "--max-refused 150: must be a percent from 0 to below 100"},
		{[]string{"limits", "set", "--company", co, "--rate", "0", "--burst", "1000000"}, "--rate 0: must be from 0.001 to 100000 requests per second; --burst 1000000"},
		{[]string{"limits", "shape", "--company", co, "--mode", "LIVE", "--since", "31d"}, "--since"},
		{[]string{"limits", "headroom", "--top", "0"}, "--top 0: must be 1 to 100"},
	} {
		code, _, errs := gw(t, down, bad.args...)
		if code != 2 || !strings.Contains(errs, bad.want) || !strings.Contains(errs, "usage: gateway "+bad.args[0]+" "+bad.args[1]) {
			t.Errorf("%v: exit %d, %q; want 2, %q and the usage", bad.args, code, errs, bad.want)
		}
	}
	unknown := "0a5e7c1e-0000-4000-8000-0000000000ff"
	for _, args := range [][]string{
		{"limits", "whatif", "--company", unknown, "--mode", "LIVE", "--rate", "20", "--burst", "40"},
		{"limits", "shape", "--company", unknown, "--mode", "LIVE"},
		{"limits", "set", "--company", unknown, "--rate", "20", "--burst", "40"},
	} {
		if code, out, errs := gw(t, env, args...); code != 1 || !strings.Contains(errs, "No company "+unknown+" exists on the platform") {
			t.Errorf("%v: exit %d, %q%q", args, code, out, errs)
		}
	}
	if code, out, _ := gw(t, env, "limits", "get", "--company", unknown); code != 0 || strings.Contains(out, "custom") {
		t.Errorf("limits get of the unknown company: exit %d\n%s", code, out)
	}
	// The database down: limits set still throttles, and says the company
	// was not checked.
	noDB := func(k string) string {
		if k == "GATEWAY_LIVE_DATABASE_URL" {
			return "postgres://root@127.0.0.1:1/none?sslmode=disable"
		}
		return env(k)
	}
	if code, out, errs := gw(t, noDB, "limits", "set", "--company", co, "--mode", "TEST", "--rate", "3", "--burst", "4"); code != 0 ||
		!strings.Contains(out, "TEST  3 rps, burst 4 (custom)") || !strings.Contains(errs, "warning: the company is not checked against the platform") {
		t.Errorf("limits set with the database down: exit %d\n%s%s", code, out, errs)
	}
	// --rps, the old name of --rate, still works; the help shows --rate only.
	if code, out, errs := gw(t, env, "limits", "set", "--company", co, "--mode", "LIVE", "--rps", "7", "--burst", "9"); code != 0 || !strings.Contains(out, "LIVE  7 rps, burst 9 (custom)") {
		t.Errorf("--rps: exit %d\n%s%s", code, out, errs)
	}
	if _, out, _ := gw(t, env, "limits", "set", "--help"); strings.Contains(out, "  --rps") || !strings.Contains(out, "--rate N") {
		t.Errorf("help:\n%s", out)
	}
}
