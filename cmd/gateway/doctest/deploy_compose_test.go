package doctest

import (
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/invoicing-ao/gateway/cmd/gateway/internal/config"
)

// composeFile is the part of the compose specification the checks read;
// the rest is left to Docker. yaml.v3 resolves the file's anchors and merge
// keys as Compose does.
type composeFile struct {
	Services map[string]composeService `yaml:"services"`
}

// composeService is a service of the compose file, as far as the checks
// read it.
type composeService struct {
	Image      string `yaml:"image"`
	Build      *struct{ Context, Dockerfile string }
	Entrypoint []string          `yaml:"entrypoint"`
	Command    []string          `yaml:"command"`
	Env        map[string]string `yaml:"environment"`
	Ports      []string          `yaml:"ports"`
	Expose     []string          `yaml:"expose"`
	Volumes    []string          `yaml:"volumes"`
	Health     *struct {
		Test []string `yaml:"test"`
	} `yaml:"healthcheck"`
	StopGrace string `yaml:"stop_grace_period"`
	MemLimit  string `yaml:"mem_limit"`
}

// interpolation is Compose's ${VAR}, ${VAR:-default}, ${VAR:?message}.
var interpolation = regexp.MustCompile(`\$\{([A-Z0-9_]+)(:?[-?][^}]*)?\}`)

func TestComposeMatchesConfiguration(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(repoRoot, "deploy")
	b, err := os.ReadFile(filepath.Join(dir, "compose.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var f composeFile
	if err := yaml.Unmarshal(b, &f); err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	gwSvc, ok := f.Services["gateway"]
	if !ok {
		t.Fatal("no gateway service")
	}
	if gwSvc.Build == nil || filepath.Clean(filepath.Join(dir, gwSvc.Build.Context)) != filepath.Clean(repoRoot) {
		t.Fatalf("gateway build context %+v is not the repository root", gwSvc.Build)
	}
	if _, err := os.Stat(filepath.Join(dir, gwSvc.Build.Context, gwSvc.Build.Dockerfile)); err != nil {
		t.Fatalf("Dockerfile: %v", err)
	}

	// Every service that runs the gateway image: real settings, real
	// commands, and a configuration that loads.
	commands := map[string]bool{"serve": true, "data": true, "keys": true, "limits": true, "usage": true, "demo": true, "state": true}
	for name, s := range f.Services {
		if s.Image != gwSvc.Image {
			continue
		}
		var names []string
		env := map[string]string{}
		for k, v := range s.Env {
			names = append(names, k)
			env[k] = fromOperator(k, v)
		}
		checkEnvNames(t, "compose service "+name, names)
		if len(s.Entrypoint) > 0 {
			args := append(append([]string{}, s.Entrypoint[1:]...), s.Command...)
			if s.Entrypoint[0] != "/gateway" || len(args) == 0 || !commands[args[0]] {
				t.Errorf("service %s runs %v %v: not a gateway command", name, s.Entrypoint, s.Command)
			}
		}
		cfg, err := config.Load(shippedCfg, envOf(env), config.NeedAll)
		if err != nil {
			t.Errorf("service %s: configuration does not load: %v", name, err)
			continue
		}
		checkComposeURLs(t, name, cfg, f)
		if name == "gateway" {
			checkComposeGateway(t, f, s, cfg, env)
		}
	}
}

// checkComposeGateway checks the gateway service: it publishes the
// configured listeners, the admin one on loopback only; its health check
// probes a served path; its traces go to a service of the stack; stopping
// waits for the drain.
func checkComposeGateway(t *testing.T, f composeFile, s composeService, cfg config.Config, env map[string]string) {
	t.Helper()
	published := map[int]string{}
	for _, p := range s.Ports {
		i := strings.LastIndex(p, ":")
		n, _ := strconv.Atoi(p[i+1:])
		published[n] = p[:i]
	}
	if _, ok := published[portOf(t, cfg.Addr)]; !ok {
		t.Errorf("public port %s not published: %v", cfg.Addr, s.Ports)
	}
	if host, ok := published[portOf(t, cfg.AdminAddr)]; !ok || !strings.HasPrefix(host, "127.0.0.1:") {
		t.Errorf("admin port %s published as %q: it must be, on 127.0.0.1 only", cfg.AdminAddr, host)
	}
	if h, _, _ := strings.Cut(cfg.AdminAddr, ":"); h != "" && h != "0.0.0.0" {
		t.Errorf("adminAddr %s inside the container cannot be published", cfg.AdminAddr)
	}
	if len(published) != 2 {
		t.Errorf("gateway publishes %v; want the two listeners", s.Ports)
	}

	// The health check runs the probe command on a served path of the
	// public listener.
	hc := s.Health
	if hc == nil || len(hc.Test) != 4 || hc.Test[0] != "CMD" || hc.Test[1] != "/gateway" || hc.Test[2] != "probe" {
		t.Fatalf("gateway healthcheck %+v: want [CMD /gateway probe URL]", hc)
	}
	u, err := url.Parse(hc.Test[3])
	if err != nil || u.Port() != strconv.Itoa(portOf(t, cfg.Addr)) || servedStatus(t, u.Path) != 200 {
		t.Errorf("healthcheck URL %s: not a served path on the public port %s", hc.Test[3], cfg.Addr)
	}

	// Traces go to a service of the stack.
	if ep := env["OTEL_EXPORTER_OTLP_ENDPOINT"]; ep != "" {
		u, err := url.Parse(ep)
		if err != nil {
			t.Fatalf("OTEL_EXPORTER_OTLP_ENDPOINT %q: %v", ep, err)
		}
		svc, ok := f.Services[u.Hostname()]
		exposed := strings.Join(append(append([]string{}, svc.Expose...), svc.Ports...), " ")
		if !ok || !strings.Contains(exposed, u.Port()) {
			t.Errorf("OTLP endpoint %s: no service %q exposing port %s", ep, u.Hostname(), u.Port())
		}
	}
	// Stopping waits for the drain.
	grace, err := time.ParseDuration(s.StopGrace)
	if err != nil || grace <= cfg.DrainDelay+cfg.ShutdownTimeout {
		t.Errorf("stop_grace_period %q does not exceed drainDelay + shutdownTimeout = %v", s.StopGrace, cfg.DrainDelay+cfg.ShutdownTimeout)
	}
}

// checkComposeURLs checks that the databases and Redis a service uses are
// the stack's: PostgreSQL URLs to the postgres service, its user, and a
// database its init script creates (the gateway's own among them); Redis
// to the redis service.
func checkComposeURLs(t *testing.T, name string, cfg config.Config, f composeFile) {
	t.Helper()
	pg, ok := f.Services["postgres"]
	if !ok {
		t.Fatal("no postgres service")
	}
	created := map[string]bool{}
	for _, v := range pg.Volumes {
		src, dst, _ := strings.Cut(v, ":")
		if !strings.HasPrefix(dst, "/docker-entrypoint-initdb.d/") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(repoRoot, "deploy", src))
		if err != nil {
			t.Fatalf("postgres init %s: %v", src, err)
		}
		for _, m := range regexp.MustCompile(`(?m)^CREATE DATABASE (\w+);`).FindAllStringSubmatch(string(b), -1) {
			created[m[1]] = true
		}
	}
	for _, db := range []string{cfg.LiveDatabaseURL, cfg.TestDatabaseURL, cfg.HistoryDatabaseURL} {
		u, err := url.Parse(db)
		if err != nil || u.Scheme != "postgres" || u.Hostname() != "postgres" ||
			u.User.Username() != pg.Env["POSTGRES_USER"] || !created[strings.TrimPrefix(u.Path, "/")] {
			t.Errorf("service %s: database URL %s is not one of the postgres service's databases %v", name, config.RedactURL(db), created)
		}
		if p, _ := u.User.Password(); p != pg.Env["POSTGRES_PASSWORD"] {
			t.Errorf("service %s: database password differs from the postgres service's", name)
		}
	}
	rs, ok := f.Services["redis"]
	if !ok {
		t.Fatal("no redis service")
	}
	if u, err := url.Parse(cfg.RedisURL); err != nil || u.Hostname() != "redis" {
		t.Errorf("service %s: Redis URL %s is not the redis service", name, cfg.RedisURL)
	}
	// The control plane lives in it: AOF on a volume, no eviction, as
	// serve requires (redisguard.go).
	cmd := strings.Join(rs.Command, " ")
	if !strings.Contains(cmd, "--appendonly yes") || !strings.Contains(cmd, "--maxmemory-policy noeviction") || !slices.ContainsFunc(rs.Volumes, func(v string) bool { return strings.HasSuffix(v, ":/data") }) {
		t.Errorf("the redis service runs %q with volumes %v: want AOF on a volume at /data and maxmemory-policy noeviction", cmd, rs.Volumes)
	}
	if n, auto, err := config.ParseMinReplicas(cfg.RedisMinReplicas); err != nil || !auto && n == 0 {
		t.Errorf("service %s: redisMinReplicas %q opts out of replicas' confirmations", name, cfg.RedisMinReplicas)
	}
}

// fromOperator is a variable's value with the operator's values (compose's
// interpolations) stood in for, of the shape the setting needs.
func fromOperator(name, v string) string {
	return interpolation.ReplaceAllStringFunc(v, func(string) string {
		switch name {
		case "GATEWAY_WEBHOOK_SECRETS_KEY":
			return testSecretsKey // an age identity, as the operator's must be
		case "GATEWAY_ADMIN_TOKEN":
			return testAdminToken // a strong token, as the compose file's comment makes one
		}
		return "from-operator"
	})
}
