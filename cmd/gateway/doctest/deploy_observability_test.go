package doctest

// Offline checks of deploy/observability: the dashboard and the rules read
// only metrics the real gateway exports, with labels it really sets; promtool
// checks the rules and runs their unit tests. The compose side is in
// deploy_compose_observability_test.go.

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"gopkg.in/yaml.v3"

	"github.com/invoicing-ao/gateway/internal/testenv"
)

const obsDir = repoRoot + "/deploy/observability"

var (
	seriesOnce sync.Once
	series     map[string]map[string]bool
)

// exportedSeries is every series name the real gateway's /metrics (admin
// listener) serves, with its label names, after a few API requests so that
// the per-request families exist. A histogram gives _bucket (with le), _sum
// and _count, the names PromQL uses.
func exportedSeries(t *testing.T) map[string]map[string]bool {
	t.Helper()
	seriesOnce.Do(func() {
		parser := expfmt.NewTextParser(model.UTF8Validation)
		mfs, err := parser.TextToMetricFamilies(strings.NewReader(scrapeWithWatermarks(t)))
		if err != nil {
			t.Fatalf("/metrics: %v", err)
		}
		series = map[string]map[string]bool{}
		add := func(name string, m *dto.Metric, extra ...string) {
			if series[name] == nil {
				series[name] = map[string]bool{}
			}
			for _, l := range m.Label {
				series[name][l.GetName()] = true
			}
			for _, l := range extra {
				series[name][l] = true
			}
		}
		for name, mf := range mfs {
			for _, m := range mf.Metric {
				switch mf.GetType() {
				case dto.MetricType_HISTOGRAM:
					add(name+"_bucket", m, "le")
					add(name+"_sum", m)
					add(name+"_count", m)
				case dto.MetricType_SUMMARY:
					add(name, m, "quantile")
					add(name+"_sum", m)
					add(name+"_count", m)
				default:
					add(name, m)
				}
			}
		}
	})
	if series == nil {
		t.Fatal("the demo's metrics could not be read")
	}
	return series
}

// scrapeWithWatermarks waits until the demo's webhooks detection has
// watermarks, whose lag /metrics reports only once they exist, and returns
// the scrape that shows them (the events' state is read from Redis at most
// every few seconds: this can take that long).
func scrapeWithWatermarks(t *testing.T) string {
	t.Helper()
	d := runningDemo(t)
	var body string
	testenv.Eventually(t, "gateway_events_detector_lag_seconds on the demo's /metrics", func() error {
		code, b := d.scrape(t, "/metrics")
		if code != http.StatusOK || !strings.Contains(b, "gateway_events_detector_lag_seconds{") {
			return fmt.Errorf("/metrics (%d) has no gateway_events_detector_lag_seconds", code)
		}
		body = b
		return nil
	})
	return body
}

// targetLabels are the labels Prometheus adds to every scraped series.
var targetLabels = map[string]bool{"instance": true, "job": true}

// promqlRefs lists the metric names and label names (matchers, by/without/
// on/ignoring lists) a PromQL expression refers to; Grafana's $variables are
// skipped. It reads names only: promtool checks the syntax.
func promqlRefs(expr string) (metrics, labels []string) {
	for i := 0; i < len(expr); {
		c := expr[i]
		switch {
		case c == '"' || c == '\'' || c == '`':
			i = skipString(expr, i)
		case c == '#': // a comment, to the end of the line
			if j := strings.IndexByte(expr[i:], '\n'); j >= 0 {
				i += j
			} else {
				i = len(expr)
			}
		case c == '[': // a range or subquery: durations only
			i += strings.IndexByte(expr[i:], ']') + 1
		case c == '$': // Grafana variable: $name or ${name}
			if i+1 < len(expr) && expr[i+1] == '{' {
				i += strings.IndexByte(expr[i:], '}') + 1
			} else {
				i = identEnd(expr, i+1)
			}
		case c == '{': // label matchers
			var names []string
			names, i = matcherLabels(expr, i)
			labels = append(labels, names...)
		case c >= '0' && c <= '9' || c == '.': // numbers, durations (offset 10m)
			for i < len(expr) && (isIdent(expr[i]) || expr[i] == '.') {
				i++
			}
		case isIdentStart(c):
			var metric string
			var names []string
			metric, names, i = identifier(expr, i)
			if metric != "" {
				metrics = append(metrics, metric)
			}
			labels = append(labels, names...)
		default:
			i++
		}
	}
	return metrics, labels
}

func isIdentStart(c byte) bool {
	return c == '_' || c == ':' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func isIdent(c byte) bool { return isIdentStart(c) || c >= '0' && c <= '9' }

// skipString is where the string that starts at i ends, its quote passed.
func skipString(expr string, i int) int {
	q := expr[i]
	for i++; i < len(expr) && expr[i] != q; i++ {
		if expr[i] == '\\' && q != '`' {
			i++
		}
	}
	return i + 1
}

// identEnd is where the identifier at i ends.
func identEnd(expr string, i int) int {
	for i < len(expr) && isIdent(expr[i]) {
		i++
	}
	return i
}

// matcherLabels reads the label names of the matchers that start at i
// (at the {), and returns them and where the matchers end, the } passed.
func matcherLabels(expr string, i int) (labels []string, end int) {
	for i++; i < len(expr) && expr[i] != '}'; {
		switch {
		case isIdentStart(expr[i]):
			j := identEnd(expr, i)
			labels = append(labels, expr[i:j])
			i = j
		case expr[i] == '"' || expr[i] == '\'' || expr[i] == '`':
			i = skipString(expr, i)
		default:
			i++
		}
	}
	return labels, i + 1
}

// identifier reads the word at i: a grouping's label list (by, without, on,
// ignoring), a function, an aggregation or a keyword (no metric), or a
// metric. It returns the metric or the labels, and where the word (or the
// list) ends.
func identifier(expr string, i int) (metric string, labels []string, end int) {
	j := identEnd(expr, i)
	word := expr[i:j]
	k := j
	for k < len(expr) && (expr[k] == ' ' || expr[k] == '\n' || expr[k] == '\t') {
		k++
	}
	next := byte(0)
	if k < len(expr) {
		next = expr[k]
	}
	switch {
	case promqlGrouping[word] && next == '(':
		closing := k + strings.IndexByte(expr[k:], ')')
		for _, l := range strings.Split(expr[k+1:closing], ",") {
			if l = strings.TrimSpace(l); l != "" {
				labels = append(labels, l)
			}
		}
		return "", labels, closing + 1
	case next == '(' || promqlKeywords[word]:
		return "", nil, j // a function, an aggregation or a keyword
	}
	return word, nil, j
}

var (
	promqlGrouping = map[string]bool{"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true}
	promqlKeywords = map[string]bool{"and": true, "or": true, "unless": true, "bool": true, "offset": true, "atan2": true,
		"inf": true, "nan": true, "start": true, "end": true, "group_left": true, "group_right": true,
		"sum": true, "min": true, "max": true, "avg": true, "group": true, "stddev": true, "stdvar": true, "count": true,
		"count_values": true, "bottomk": true, "topk": true, "quantile": true, "limitk": true, "limit_ratio": true}
)

func TestPromQLRefs(t *testing.T) {
	t.Parallel()
	for expr, want := range map[string][2]string{
		`sum by (route, le) (rate(a_bucket{instance=~"$instance",x="}"}[$__rate_interval]))`:        {"a_bucket", "route le instance x"},
		`histogram_quantile(0.99, sum without (b) (rate(m[5m] offset 10m))) > 0.5 and on (route) c`: {"m c", "b route"},
		"x:y:z / 0.001\n# a comment\n":                  {"x:y:z", ""},
		`absent(up{job="g"} == 1) or vector(0)`:         {"up", "job"},
		`max(a) + 2 * max by (db) (b{s='o\'k',t!~"."})`: {"a b", "db s t"},
		`a * on (i) group_left (j) b{k=""}`:             {"a b", "i j k"},
		`sum(rate(n[1h:5m])) unless bool ${v}`:          {"n", ""},
	} {
		m, l := promqlRefs(expr)
		if got := [2]string{strings.Join(m, " "), strings.Join(l, " ")}; got != want {
			t.Errorf("promqlRefs(%q) = %q, want %q", expr, got, want)
		}
	}
}

// checkRefs fails on a name expr reads that the gateway does not export
// (other than recorded or allowed ones), and on a label none of the series
// it reads has.
func checkRefs(t *testing.T, where, expr string, recorded map[string][]string, allowed ...string) {
	t.Helper()
	exported := exportedSeries(t)
	metrics, labels := promqlRefs(expr)
	if len(metrics) == 0 {
		t.Errorf("%s: %q reads no metric", where, expr)
	}
	have := map[string]bool{}
	for l := range targetLabels {
		have[l] = true
	}
	for _, m := range metrics {
		switch {
		case exported[m] != nil:
			for l := range exported[m] {
				have[l] = true
			}
		case hasKey(recorded, m):
			for _, l := range recorded[m] {
				have[l] = true
			}
		case contains(allowed, m):
		default:
			t.Errorf("%s: %s is not a metric the gateway exports (nor a recorded one)", where, m)
		}
	}
	for _, l := range labels {
		if !have[l] {
			t.Errorf("%s: label %q is on none of %v", where, l, metrics)
		}
	}
}

func hasKey(m map[string][]string, k string) bool { _, ok := m[k]; return ok }

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

// promtool is Debian's promtool (package prometheus). Without it the test
// skips, except under CI, where .ci/test installs it.
func promtool(t *testing.T, args ...string) {
	t.Helper()
	bin, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("promtool not found under CI=true: .ci/test installs Debian's prometheus package")
		}
		t.Skip("promtool not found (apt-get install prometheus); CI runs this check")
	}
	if out, err := exec.Command(bin, args...).CombinedOutput(); err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// decodeLoose decodes the YAML file at path into v, ignoring fields v lacks.
func decodeLoose(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// decodeStrict decodes the YAML file at path into v; a field v lacks is an
// error (a misspelt key would be ignored by the program that reads it).
func decodeStrict(t *testing.T, path string, v any) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dec := yaml.NewDecoder(f)
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
