package doctest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every webhooks' metric the real gateway serves is in the table of
// docs/observability.md, and every one the table names is served.
func TestEventsMetricsDocumented(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join(repoRoot, "docs", "observability.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	served := map[string]bool{}
	for name := range exportedSeries(t) {
		if !strings.HasPrefix(name, "gateway_events_") {
			continue
		}
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if base, ok := strings.CutSuffix(name, suffix); ok && strings.HasSuffix(base, "_seconds") {
				name = base
			}
		}
		served[name] = true
		if !strings.Contains(doc, "`"+name+"`") {
			t.Errorf("%s is served but not in docs/observability.md", name)
		}
	}
	if len(served) == 0 {
		t.Fatal("the gateway serves no gateway_events_ metric")
	}
	for _, f := range strings.Split(doc, "`")[1:] {
		if strings.HasPrefix(f, "gateway_events_") && !strings.ContainsAny(f, " {") && !served[f] {
			t.Errorf("docs/observability.md names %s, which the gateway does not serve", f)
		}
	}
}
