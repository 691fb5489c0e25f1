package config

import (
	"strings"
	"testing"
	"time"
)

// The breaker and drain settings: defaults, the shipped file, and refusals
// that name the setting.
func TestResilienceSettings(t *testing.T) {
	base := map[string]string{"GATEWAY_LIVE_DATABASE_URL": "postgres://db/live", "GATEWAY_TEST_DATABASE_URL": "postgres://db/test", "GATEWAY_HISTORY_DATABASE_URL": "postgres://db/gateway"}
	cfg, err := Load("", envOf(base), NeedAll)
	if err != nil {
		t.Fatal(err)
	}
	// Unset, the breaker's settings are zero: backend's defaults apply.
	if cfg.BreakerFailures != 0 || cfg.BreakerOpenFor != 0 || cfg.DrainDelay != 0 {
		t.Errorf("defaults: failures %d, open for %v, drain delay %v", cfg.BreakerFailures, cfg.BreakerOpenFor, cfg.DrainDelay)
	}
	shipped, err := Load("../../../../configs/gateway.yaml", envOf(nil), NeedAll)
	if err != nil {
		t.Fatal(err)
	}
	if shipped.DrainDelay != 5*time.Second || shipped.BreakerFailures != 5 || shipped.BreakerOpenFor != 5*time.Second {
		t.Errorf("shipped: failures %d, open for %v, drain delay %v", shipped.BreakerFailures, shipped.BreakerOpenFor, shipped.DrainDelay)
	}
	for k, v := range map[string]string{
		"GATEWAY_BREAKER_FAILURES": "-1", "GATEWAY_BREAKER_OPEN_FOR": "-1s", "GATEWAY_DRAIN_DELAY": "-1s",
	} {
		env := map[string]string{k: v}
		for bk, bv := range base {
			env[bk] = bv
		}
		if _, err := Load("", envOf(env), NeedAll); err == nil || !strings.Contains(err.Error(), k) {
			t.Errorf("%s=%s: %v, want an error naming it", k, v, err)
		}
	}
}
