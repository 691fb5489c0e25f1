package doctest

// The Grafana dashboard and its provisioning.

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// dashboard: what of Grafana's JSON model the checks read.
type grafanaDS struct{ Type, UID string }

type grafanaPanel struct {
	ID         int
	Type       string
	Title      string
	Datasource *grafanaDS
	GridPos    struct{ H, W, X, Y int }
	Targets    []struct {
		RefID      string `json:"refId"`
		Datasource *grafanaDS
		Expr       string
	}
	Panels []grafanaPanel // a collapsed row's
}

type grafanaDashboard struct {
	UID        string
	Title      string
	Panels     []grafanaPanel
	Templating struct {
		List []struct {
			Name       string
			Type       string
			Datasource *grafanaDS
			Query      struct{ Query string }
		}
	}
}

func (d grafanaDashboard) allPanels() []grafanaPanel {
	var out []grafanaPanel
	for _, p := range d.Panels {
		out = append(out, p)
		out = append(out, p.Panels...)
	}
	return out
}

const dashboardFile = obsDir + "/grafana/dashboards/gateway.json"

// provisionedDatasource is the uid and type of the datasource Grafana is
// provisioned with.
func provisionedDatasource(t *testing.T) grafanaDS {
	var f struct {
		APIVersion  int `yaml:"apiVersion"`
		Datasources []struct {
			Name, UID, Type, Access, URL string
			IsDefault                    bool           `yaml:"isDefault"`
			Editable                     bool           `yaml:"editable"`
			JSONData                     map[string]any `yaml:"jsonData"`
		} `yaml:"datasources"`
	}
	decodeStrict(t, obsDir+"/grafana/provisioning/datasources/prometheus.yaml", &f)
	if len(f.Datasources) != 1 || f.Datasources[0].Type != "prometheus" || f.Datasources[0].UID == "" {
		t.Fatalf("want one prometheus datasource with a uid: %+v", f.Datasources)
	}
	return grafanaDS{Type: "prometheus", UID: f.Datasources[0].UID}
}

// dashboardMetrics are the gateway's metrics the dashboard must show
// (requests, errors and latency per route, 429s by mode, breakers, key
// cache, Redis fallback, database and Redis pools, the webhooks' work,
// backlog, detection and endpoints).
var dashboardMetrics = []string{
	"gateway_http_requests_total", "gateway_http_request_duration_seconds_bucket",
	"gateway_ratelimit_decisions_total", "gateway_ratelimit_fallback_active",
	"gateway_database_breaker_state", "gateway_key_cache_lookups_total",
	"gateway_database_pool_connections", "gateway_database_pool_max_connections",
	"gateway_database_pool_acquires_total", "gateway_database_pool_waits_total", "gateway_database_pool_wait_seconds_total",
	"gateway_redis_pool_connections", "gateway_redis_pool_events_total",
	"gateway_events_detected_total", "gateway_events_enqueued_total", "gateway_events_delivery_attempts_total",
	"gateway_events_delivery_latency_seconds_bucket", "gateway_events_backlog", "gateway_events_oldest_due_seconds",
	"gateway_events_detector_lag_seconds", "gateway_events_detector_leader", "gateway_events_endpoints",
	"gateway_events_delivery_failures_total", "gateway_events_deliveries_in_flight",
	"gateway_events_commit_to_delivery_seconds_bucket", "gateway_events_commit_to_queue_seconds_bucket",
	"gateway_events_oldest_transaction_seconds",
}

var grafanaVar = regexp.MustCompile(`\$\{?(\w+)\}?`)

func TestDashboard(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d grafanaDashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("gateway.json is not valid JSON: %v", err)
	}
	if d.UID == "" || d.Title == "" {
		t.Errorf("dashboard uid %q, title %q: both are needed (links and provisioning)", d.UID, d.Title)
	}
	ds := provisionedDatasource(t)
	_, recorded := loadRules(t)
	vars := map[string]bool{}
	for _, v := range d.Templating.List {
		vars[v.Name] = true
		if v.Datasource == nil || *v.Datasource != ds {
			t.Errorf("variable %s: datasource %+v, want the provisioned %+v", v.Name, v.Datasource, ds)
		}
		m := regexp.MustCompile(`^label_values\((\w+),\s*(\w+)\)$`).FindStringSubmatch(v.Query.Query)
		if m == nil {
			t.Errorf("variable %s: query %q is not label_values(metric, label)", v.Name, v.Query.Query)
			continue
		}
		checkRefs(t, "variable "+v.Name, m[1], recorded)
		if !exportedSeries(t)[m[1]][m[2]] && !targetLabels[m[2]] {
			t.Errorf("variable %s: %s has no label %s", v.Name, m[1], m[2])
		}
	}
	ids, used := map[int]bool{}, map[string]bool{}
	var exprs []string
	for _, p := range d.allPanels() {
		if ids[p.ID] {
			t.Errorf("panel id %d twice", p.ID)
		}
		ids[p.ID] = true
		if p.GridPos.W <= 0 || p.GridPos.H <= 0 || p.GridPos.X < 0 || p.GridPos.X+p.GridPos.W > 24 {
			t.Errorf("panel %q: gridPos %+v outside the 24 columns", p.Title, p.GridPos)
		}
		if p.Type == "row" {
			continue
		}
		if p.Datasource == nil || *p.Datasource != ds || len(p.Targets) == 0 {
			t.Errorf("panel %q: datasource %+v and %d queries; want the provisioned %+v and a query", p.Title, p.Datasource, len(p.Targets), ds)
		}
		for _, tg := range p.Targets {
			if tg.Datasource != nil && *tg.Datasource != ds {
				t.Errorf("panel %q %s: datasource %+v, want %+v", p.Title, tg.RefID, *tg.Datasource, ds)
			}
			checkRefs(t, "panel "+p.Title, tg.Expr, recorded)
			metrics, _ := promqlRefs(tg.Expr)
			for _, m := range metrics {
				used[m] = true
			}
			for _, v := range grafanaVar.FindAllStringSubmatch(tg.Expr, -1) {
				if !strings.HasPrefix(v[1], "__") && !vars[v[1]] {
					t.Errorf("panel %q: $%s is no variable of the dashboard", p.Title, v[1])
				}
			}
			exprs = append(exprs, tg.Expr)
		}
	}
	for _, m := range dashboardMetrics {
		if !used[m] {
			t.Errorf("no panel shows %s", m)
		}
	}
	checkSyntax(t, exprs)
}

// checkSyntax has promtool parse the expressions, Grafana's variables
// replaced by values of their kind, as recording rules.
func checkSyntax(t *testing.T, exprs []string) {
	type rec struct{ Record, Expr string }
	var rules []rec
	for i, e := range exprs {
		e = grafanaVar.ReplaceAllStringFunc(e, func(v string) string {
			if strings.Contains(v, "__") {
				return "5m" // $__rate_interval, $__interval, $__range: durations
			}
			return ".*" // the instance variable's "All"
		})
		rules = append(rules, rec{Record: fmt.Sprintf("dashboard:expr_%d", i), Expr: e})
	}
	b, err := yaml.Marshal(map[string]any{"groups": []any{map[string]any{"name": "dashboard", "rules": rules}}})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "dashboard-exprs.yml")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	promtool(t, "check", "rules", path)
}
