package main

import (
	"context"
	"encoding/json"
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
	rdb, prefix := testenv.Redis(t)
	env := envOf(map[string]string{"GATEWAY_REDIS_URL": testenv.RedisURL(), "GATEWAY_REDIS_PREFIX": prefix})
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
	if code != 0 || !strings.Contains(out, "LIVE: 1 company with") || !strings.Contains(out, co+"  10 of 50 rps, burst 100 (20 %)") {
		t.Errorf("headroom: exit %d\n%s", code, out)
	}
	for _, bad := range [][]string{
		{"limits", "whatif", "--company", co, "--mode", "LIVE", "--rate", "0", "--burst", "40"},
		{"limits", "whatif", "--company", co, "--mode", "LIVE", "--rate", "20", "--burst", "40", "--since", "40d"},
		{"limits", "whatif", "--company", co, "--mode", "PROD", "--rate", "20", "--burst", "40"},
		{"limits", "whatif", "--company", co, "--mode", "LIVE", "--rate", "20", "--burst", "40", "--since", "yesterday"},
	} {
		if code, _, errs := gw(t, env, bad...); code == 0 || errs == "" {
			t.Errorf("%v: exit %d", bad, code)
		}
	}
}
