package doctest

// The compose stack's observability services, offline: each mounts the file
// the other checks test, and each talks to what another really serves.

import (
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/invoicing-ao/gateway/cmd/gateway/internal/config"
)

const deployDir = repoRoot + "/deploy"

func readCompose(t *testing.T) composeFile {
	t.Helper()
	var f composeFile
	decodeLoose(t, deployDir+"/compose.yaml", &f)
	return f
}

// service is the compose service name; it must exist.
func service(t *testing.T, services map[string]composeService, name string) composeService {
	t.Helper()
	s, ok := services[name]
	if !ok {
		t.Fatalf("compose.yaml has no %s service", name)
	}
	return s
}

// hostPath is the file of the repository a container path comes from,
// given the service's volumes (its bind mounts), or "" when none is
// mounted there.
func hostPath(volumes []string, inContainer string) string {
	for _, v := range volumes {
		parts := strings.Split(v, ":")
		if len(parts) < 2 || !strings.HasPrefix(parts[0], ".") {
			continue // a named volume
		}
		rel, err := filepath.Rel(parts[1], inContainer)
		if err == nil && !strings.HasPrefix(rel, "..") {
			return filepath.Join(deployDir, parts[0], rel)
		}
	}
	return ""
}

// flagValue is the value of --name=value in args, or "".
func flagValue(args []string, name string) string {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v
		}
	}
	return ""
}

// reachable fails unless host:port is a service of the stack that exposes
// or publishes port.
func reachable(t *testing.T, f composeFile, what, hostport string) {
	t.Helper()
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		t.Fatalf("%s %q: %v", what, hostport, err)
	}
	s, ok := f.Services[host]
	open := append(append([]string{}, s.Expose...), s.Ports...)
	found := false
	for _, p := range open {
		found = found || p == port || strings.HasSuffix(p, ":"+port)
	}
	if !ok || !found {
		t.Errorf("%s %s: no service %q exposing port %s", what, hostport, host, port)
	}
}

// loopbackOnly fails unless every published port is on 127.0.0.1.
func loopbackOnly(t *testing.T, name string, ports []string) {
	t.Helper()
	for _, p := range ports {
		if !strings.HasPrefix(p, "127.0.0.1:") {
			t.Errorf("%s publishes %s beyond loopback", name, p)
		}
	}
}

func TestComposeObservability(t *testing.T) {
	t.Parallel()
	f := readCompose(t)
	for _, name := range []string{"otel-collector", "prometheus", "grafana", "jaeger"} {
		if img := service(t, f.Services, name).Image; !regexp.MustCompile(`:v?\d+\.\d+\.\d+$`).MatchString(img) {
			t.Errorf("%s image %q: pin a full version", name, img)
		}
	}
	t.Run("collector", func(t *testing.T) { checkComposeCollector(t, f) })
	t.Run("prometheus", func(t *testing.T) { checkComposePrometheus(t, f) })
	t.Run("grafana", func(t *testing.T) { checkComposeGrafana(t, f) })
}

// gatewayEnv is the gateway service's environment, the operator's values
// stood in for.
func gatewayEnv(t *testing.T, f composeFile) map[string]string {
	env := map[string]string{}
	for k, v := range service(t, f.Services, "gateway").Env {
		env[k] = fromOperator(k, v)
	}
	return env
}

// gatewayConfig is the configuration the gateway service runs with.
func gatewayConfig(t *testing.T, f composeFile) config.Config {
	cfg, err := config.Load(shippedCfg, envOf(gatewayEnv(t, f)), config.NeedAll)
	if err != nil {
		t.Fatalf("gateway configuration: %v", err)
	}
	return cfg
}

func checkComposeGrafana(t *testing.T, f composeFile) {
	s := service(t, f.Services, "grafana")
	loopbackOnly(t, "grafana", s.Ports) // anonymous viewers
	prov := hostPath(s.Volumes, "/etc/grafana/provisioning")
	for _, p := range []string{"datasources/prometheus.yaml", "dashboards/gateway.yaml"} {
		if _, err := os.Stat(filepath.Join(prov, p)); prov == "" || err != nil {
			t.Errorf("grafana's /etc/grafana/provisioning/%s is not mounted from deploy/observability/grafana/provisioning", p)
		}
	}
	var dp struct {
		APIVersion int `yaml:"apiVersion"`
		Providers  []struct {
			Name, Folder, Type    string
			DisableDeletion       bool `yaml:"disableDeletion"`
			AllowUIUpdates        bool `yaml:"allowUiUpdates"`
			UpdateIntervalSeconds int  `yaml:"updateIntervalSeconds"`
			Options               struct{ Path string }
		}
	}
	decodeStrict(t, filepath.Join(prov, "dashboards/gateway.yaml"), &dp)
	if len(dp.Providers) != 1 || dp.Providers[0].Type != "file" ||
		hostPath(s.Volumes, filepath.Join(dp.Providers[0].Options.Path, "gateway.json")) != filepath.Clean(dashboardFile) {
		t.Errorf("the dashboard provider %+v does not read the mounted deploy/observability/grafana/dashboards", dp.Providers)
	}
	if home := s.Env["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"]; home != "" && hostPath(s.Volumes, home) != filepath.Clean(dashboardFile) {
		t.Errorf("home dashboard %s is not the mounted gateway.json", home)
	}
	var ds struct {
		Datasources []struct{ URL string }
	}
	decodeLoose(t, filepath.Join(prov, "datasources/prometheus.yaml"), &ds)
	u, err := url.Parse(ds.Datasources[0].URL)
	if err != nil || u.Hostname() != "prometheus" {
		t.Fatalf("datasource URL %q is not the prometheus service", ds.Datasources[0].URL)
	}
	// Prometheus listens on :9090 unless told otherwise.
	listen := flagValue(service(t, f.Services, "prometheus").Command, "web.listen-address")
	if listen == "" {
		listen = ":9090"
	}
	if _, port, _ := net.SplitHostPort(listen); port != u.Port() {
		t.Errorf("datasource %s: Prometheus listens on %s", u, listen)
	}
}

// collectorConfig is what the checks read of the collector's configuration.
type collectorConfig struct {
	Receivers, Processors, Exporters, Extensions map[string]any
	Service                                      struct {
		Extensions []string
		Pipelines  map[string]struct{ Receivers, Processors, Exporters []string }
	}
}

// collectorSettings are the settings of the components the stack relies on.
type collectorSettings struct {
	Receivers struct {
		OTLP struct {
			Protocols struct{ GRPC, HTTP *struct{ Endpoint string } }
		} `yaml:"otlp"`
	}
	Processors struct {
		MemoryLimiter struct {
			LimitMiB int `yaml:"limit_mib"`
		} `yaml:"memory_limiter"`
	}
	Exporters map[string]struct {
		Endpoint string
		TLS      struct{ Insecure bool }
	}
}

// componentType is a component id's type: "otlp/jaeger" is an otlp.
func componentType(id string) string { typ, _, _ := strings.Cut(id, "/"); return typ }

func checkComposeCollector(t *testing.T, f composeFile) {
	s := service(t, f.Services, "otel-collector")
	file := hostPath(s.Volumes, flagValue(s.Command, "config"))
	if file != filepath.Clean(obsDir+"/otel-collector.yaml") {
		t.Fatalf("the collector's --config=%s is %q, not deploy/observability/otel-collector.yaml", flagValue(s.Command, "config"), file)
	}
	var cc collectorConfig
	var cs collectorSettings
	decodeLoose(t, file, &cc)
	decodeLoose(t, file, &cs)

	// The pipeline refers to defined components only, and uses them all.
	p, ok := cc.Service.Pipelines["traces"]
	if !ok {
		t.Fatalf("no traces pipeline: %v", cc.Service.Pipelines)
	}
	for _, kind := range []struct {
		name    string
		defined map[string]any
		used    []string
	}{{"receiver", cc.Receivers, p.Receivers}, {"processor", cc.Processors, p.Processors}, {"exporter", cc.Exporters, p.Exporters}} {
		if len(kind.used) == 0 {
			t.Errorf("the traces pipeline has no %s", kind.name)
		}
		for _, id := range kind.used {
			if _, ok := kind.defined[id]; !ok {
				t.Errorf("the traces pipeline uses %s %q, which is not defined", kind.name, id)
			}
		}
		for id := range kind.defined {
			if !contains(kind.used, id) {
				t.Errorf("%s %q is defined but in no pipeline", kind.name, id)
			}
		}
	}
	types := make([]string, len(p.Processors))
	for i, id := range p.Processors {
		types[i] = componentType(id)
	}
	if len(types) == 0 || types[0] != "memory_limiter" || !contains(types, "batch") {
		t.Errorf("processors %v: want memory_limiter first, and batch", p.Processors)
	}
	if limit := memLimitMiB(t, s.MemLimit); cs.Processors.MemoryLimiter.LimitMiB <= 0 || cs.Processors.MemoryLimiter.LimitMiB >= limit {
		t.Errorf("memory_limiter limit_mib %d must be set and under the container's mem_limit %s", cs.Processors.MemoryLimiter.LimitMiB, s.MemLimit)
	}
	checkCollectorReceivers(t, f, cs)
	for _, id := range p.Exporters {
		if componentType(id) == "otlp" {
			reachable(t, f, "exporter "+id, cs.Exporters[id].Endpoint)
		}
	}
	if jaeger := service(t, f.Services, "jaeger"); jaeger.Env["COLLECTOR_OTLP_ENABLED"] != "true" {
		t.Error("jaeger does not accept OTLP (COLLECTOR_OTLP_ENABLED)")
	}
}

// checkCollectorReceivers: the gateway's OTLP endpoint is the collector, on
// the receiver of its protocol, listening beyond the container's loopback.
func checkCollectorReceivers(t *testing.T, f composeFile, cs collectorSettings) {
	env := gatewayEnv(t, f)
	ep, proto := env["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"], env["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"]
	if ep == "" {
		ep = env["OTEL_EXPORTER_OTLP_ENDPOINT"]
	}
	if proto == "" {
		proto = env["OTEL_EXPORTER_OTLP_PROTOCOL"]
	}
	u, err := url.Parse(ep)
	if err != nil || u.Hostname() != "otel-collector" {
		t.Fatalf("the gateway exports to %q, not the collector", ep)
	}
	recv := cs.Receivers.OTLP.Protocols.HTTP // http/protobuf (the default) and http/json
	if proto == "grpc" {
		recv = cs.Receivers.OTLP.Protocols.GRPC
	}
	if recv == nil {
		t.Fatalf("the collector has no OTLP %s receiver for the gateway's %s", proto, ep)
	}
	host, port, err := net.SplitHostPort(recv.Endpoint)
	if err != nil || port != u.Port() || (host != "0.0.0.0" && host != "") {
		t.Errorf("OTLP receiver %q: want 0.0.0.0:%s (the gateway's %s; the collector's default host is localhost)", recv.Endpoint, u.Port(), ep)
	}
	for _, r := range []*struct{ Endpoint string }{cs.Receivers.OTLP.Protocols.GRPC, cs.Receivers.OTLP.Protocols.HTTP} {
		if r != nil {
			_, port, _ := net.SplitHostPort(r.Endpoint)
			reachable(t, f, "OTLP receiver", "otel-collector:"+port)
		}
	}
}

// memLimitMiB reads a compose memory size such as 512m or 1g, in MiB.
func memLimitMiB(t *testing.T, v string) int {
	t.Helper()
	m := regexp.MustCompile(`^(\d+)([mg])$`).FindStringSubmatch(strings.ToLower(v))
	if m == nil {
		t.Fatalf("mem_limit %q: want a size like 512m", v)
	}
	n, _ := strconv.Atoi(m[1])
	if m[2] == "g" {
		n *= 1024
	}
	return n
}
