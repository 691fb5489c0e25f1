package doctest

// The Prometheus rules of deploy/observability: read only what the gateway
// exports, documented, and unit-tested by promtool.

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// rule files: the fields Prometheus reads, decoded strictly.
type ruleFile struct {
	Groups []struct {
		Name     string `yaml:"name"`
		Interval string `yaml:"interval"`
		Rules    []rule `yaml:"rules"`
	} `yaml:"groups"`
}

type rule struct {
	Record      string            `yaml:"record"`
	Alert       string            `yaml:"alert"`
	Expr        string            `yaml:"expr"`
	For         string            `yaml:"for"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

const rulesFile = obsDir + "/prometheus/gateway-rules.yml"

// loadRules returns the rules and each recorded name's labels (its
// grouping labels: what a sum by keeps).
func loadRules(t *testing.T) ([]rule, map[string][]string) {
	var f ruleFile
	decodeStrict(t, rulesFile, &f)
	var rules []rule
	recorded := map[string][]string{}
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			if r.Record != "" {
				_, labels := promqlRefs(r.Expr)
				recorded[r.Record] = groupingLabels(r.Expr, labels)
			}
			rules = append(rules, r)
		}
	}
	return rules, recorded
}

// groupingLabels keeps, of labels, those in a by (...) list of expr.
func groupingLabels(expr string, labels []string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`\bby\s*\(([^)]*)\)`).FindAllStringSubmatch(expr, -1) {
		for _, l := range strings.Split(m[1], ",") {
			if l = strings.TrimSpace(l); contains(labels, l) {
				out = append(out, l)
			}
		}
	}
	return out
}

func TestAlertRules(t *testing.T) {
	t.Parallel()
	rules, recorded := loadRules(t)
	readme, err := os.ReadFile(obsDir + "/README.md")
	if err != nil {
		t.Fatal(err)
	}
	const runbooks = "https://github.com/invoicing-ao/gateway/blob/main/deploy/observability/README.md#"
	seen := map[string]bool{}
	literal := regexp.MustCompile(`\{\{[^}]*\}\}`)
	for _, r := range rules {
		name := r.Record + r.Alert
		// gateway_redis_replicas is absent while Redis does not say, as
		// the probe gateway's in-process Redis does not.
		checkRefs(t, name, r.Expr, recorded, "up", "gateway_redis_replicas")
		if r.Alert == "" {
			continue
		}
		seen[r.Alert] = true
		for _, sev := range strings.Fields(literal.ReplaceAllString(r.Labels["severity"], " ")) {
			if sev != "page" && sev != "ticket" {
				t.Errorf("%s: severity %q is not page or ticket", name, r.Labels["severity"])
			}
		}
		if r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
			t.Errorf("%s: summary and description are required", name)
		}
		if r.Annotations["runbook_url"] != runbooks+strings.ToLower(r.Alert) {
			t.Errorf("%s: runbook_url %q, want %s%s", name, r.Annotations["runbook_url"], runbooks, strings.ToLower(r.Alert))
		}
		if !regexp.MustCompile(`(?m)^### ` + r.Alert + `$`).Match(readme) {
			t.Errorf("%s: no runbook section (### %s) in deploy/observability/README.md", name, r.Alert)
		}
	}
	for _, m := range regexp.MustCompile(`(?m)^### (Gateway\w+)$`).FindAllStringSubmatch(string(readme), -1) {
		if !seen[m[1]] {
			t.Errorf("README runbook %s has no alert", m[1])
		}
	}
	checkRuleTests(t, seen)
	promtool(t, "check", "rules", rulesFile)
	promtool(t, append([]string{"test", "rules"}, ruleTestFiles...)...)
}

// ruleTestFiles are the promtool unit tests: the SLO's (evaluated every 5
// minutes over day-long series), the other alerts' of the API, the
// webhooks' and Redis's (every minute).
var ruleTestFiles = []string{obsDir + "/prometheus/gateway-slo.test.yml", obsDir + "/prometheus/gateway-rules.test.yml",
	obsDir + "/prometheus/gateway-events.test.yml", obsDir + "/prometheus/gateway-redis.test.yml"}

// checkRuleTests requires of the promtool tests, for every alert, a case
// where it fires and one where it does not, on the rules file itself.
func checkRuleTests(t *testing.T, alerts map[string]bool) {
	var f struct {
		RuleFiles []string `yaml:"rule_files"`
		Tests     []struct {
			Alerts []struct {
				Name string `yaml:"alertname"`
				Exp  []any  `yaml:"exp_alerts"`
			} `yaml:"alert_rule_test"`
		} `yaml:"tests"`
	}
	fires, quiet := map[string]bool{}, map[string]bool{}
	for _, file := range ruleTestFiles {
		f.RuleFiles, f.Tests = nil, nil
		decodeLoose(t, file, &f)
		if len(f.RuleFiles) != 1 || filepath.Join(filepath.Dir(file), f.RuleFiles[0]) != filepath.Clean(rulesFile) {
			t.Errorf("%s loads %v, not gateway-rules.yml", file, f.RuleFiles)
		}
		for _, tc := range f.Tests {
			for _, a := range tc.Alerts {
				if !alerts[a.Name] {
					t.Errorf("%s tests %s, which is no alert", file, a.Name)
				}
				fires[a.Name] = fires[a.Name] || len(a.Exp) > 0
				quiet[a.Name] = quiet[a.Name] || len(a.Exp) == 0
			}
		}
	}
	var missing []string
	for a := range alerts {
		if !fires[a] || !quiet[a] {
			missing = append(missing, a)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("alerts without a test where they fire and one where they do not: %v", missing)
	}
}
