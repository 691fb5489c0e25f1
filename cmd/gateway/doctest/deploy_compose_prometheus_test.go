package doctest

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/invoicing-ao/gateway/gateway"
	"github.com/invoicing-ao/gateway/invoicing"
	"github.com/invoicing-ao/gateway/web"
)

// The compose stack's Prometheus: its configuration, the rules it loads and
// the gateway it scrapes.

func checkComposePrometheus(t *testing.T, f composeFile) {
	s := service(t, f.Services, "prometheus")
	loopbackOnly(t, "prometheus", s.Ports)
	cfgIn := flagValue(s.Command, "config.file")
	cfgFile := hostPath(s.Volumes, cfgIn)
	if cfgIn == "" || cfgFile != filepath.Clean(obsDir+"/prometheus/prometheus.yml") {
		t.Fatalf("prometheus --config.file=%s is %q, not deploy/observability/prometheus/prometheus.yml", cfgIn, cfgFile)
	}
	if d, err := model.ParseDuration(flagValue(s.Command, "storage.tsdb.retention.time")); err != nil || d < model.Duration(30*24*time.Hour) {
		t.Errorf("prometheus retention %q: the SLO needs 30 days", flagValue(s.Command, "storage.tsdb.retention.time"))
	}
	var pc struct {
		RuleFiles     []string       `yaml:"rule_files"`
		ScrapeConfigs []scrapeConfig `yaml:"scrape_configs"`
	}
	decodeLoose(t, cfgFile, &pc)
	// The rules Prometheus loads are the file promtool checks and tests:
	// rule_files are relative to the configuration's folder in the container.
	loaded := false
	for _, rf := range pc.RuleFiles {
		loaded = loaded || hostPath(s.Volumes, filepath.Join(filepath.Dir(cfgIn), rf)) == filepath.Clean(rulesFile)
	}
	if !loaded {
		t.Errorf("prometheus.yml rule_files %v do not load deploy/observability/prometheus/gateway-rules.yml", pc.RuleFiles)
	}
	// The job GatewayDown watches scrapes the gateway's admin port, on a
	// path the admin listener serves metrics on.
	jobName := gatewayDownJob(t)
	gwCfg := gatewayConfig(t, f)
	adminPort := strconv.Itoa(portOf(t, gwCfg.AdminAddr))
	hosts, err := invoicing.ParseHosts(gwCfg.AdminHosts)
	if err != nil {
		t.Fatal(err)
	}
	scraped := false
	for _, sc := range pc.ScrapeConfigs {
		if jobName == "" || sc.JobName != jobName {
			continue
		}
		for _, st := range sc.StaticConfigs {
			for _, target := range st.Targets {
				scraped = scraped || target == "gateway:"+adminPort
			}
		}
		checkScrapeJob(t, sc, hosts, gwCfg.AdminHosts)
	}
	if !scraped {
		t.Errorf("no scrape job %q (GatewayDown's) of gateway:%s (the gateway's admin port) in prometheus.yml", jobName, adminPort)
	}
	promtool(t, "check", "config", cfgFile)
}

// scrapeConfig is a scrape job of prometheus.yml.
type scrapeConfig struct {
	JobName       string `yaml:"job_name"`
	MetricsPath   string `yaml:"metrics_path"`
	StaticConfigs []struct {
		Targets []string `yaml:"targets"`
	} `yaml:"static_configs"`
}

// gatewayDownJob is the job whose up series the GatewayDown alert watches.
func gatewayDownJob(t *testing.T) string {
	t.Helper()
	rb, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	if m := regexp.MustCompile(`up\{job="([^"]+)"\}`).FindSubmatch(rb); m != nil {
		return string(m[1])
	}
	return ""
}

// checkScrapeJob checks that the admin listener serves the gateway's
// metrics on the job's path, under each name it scrapes by, which the
// gateway's adminHosts (setting) must hold: another name is refused (DNS
// rebinding).
func checkScrapeJob(t *testing.T, sc scrapeConfig, hosts []string, setting string) {
	t.Helper()
	if sc.MetricsPath == "" {
		sc.MetricsPath = "/metrics"
	}
	if code, body := runningDemo(t).scrape(t, sc.MetricsPath); code != http.StatusOK || !strings.Contains(body, "gateway_http_requests_total") {
		t.Errorf("job %s scrapes %s: the admin listener answers %d without the gateway's metrics", sc.JobName, sc.MetricsPath, code)
	}
	// The admin listener's chain with those names, as the binary builds it.
	named := web.Listener(web.Config{HostCheck: true, Hosts: hosts}, gateway.New(gateway.Config{}).Health)
	for _, st := range sc.StaticConfigs {
		for _, target := range st.Targets {
			rec := httptest.NewRecorder()
			named.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://"+target+"/healthz", nil))
			if rec.Code != http.StatusOK {
				t.Errorf("job %s scrapes %s: the admin listener answers %d to that name (GATEWAY_ADMIN_HOSTS %q)", sc.JobName, target, rec.Code, setting)
			}
		}
	}
}
