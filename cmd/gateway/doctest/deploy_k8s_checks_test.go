package doctest

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/invoicing-ao/gateway/cmd/gateway/internal/config"
	"github.com/invoicing-ao/gateway/invoicing"
)

// checkManifests checks one kustomization's objects against the
// configuration its container would load and the gateway it runs.
func checkManifests(t *testing.T, r rendered, production bool) {
	pod := r.deployment.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(pod.Containers))
	}
	c := pod.Containers[0]
	cfg := containerConfig(t, r, c)
	ports := checkPorts(t, c, cfg)
	checkPod(t, pod, c, cfg)
	checkServices(t, r, cfg, ports)
	checkNetworkPolicy(t, r, ports)
	checkScaling(t, r, c, cfg, production)
}

// containerConfig is the configuration the container runs with: the
// ConfigMap's file (which must be configs/gateway.yaml itself) under the
// container's literal environment, secrets standing in by placeholders.
func containerConfig(t *testing.T, r rendered, c corev1.Container) config.Config {
	t.Helper()
	cm := r.configMaps[0]
	shipped, err := os.ReadFile(shippedCfg)
	if err != nil {
		t.Fatal(err)
	}
	if cm.Data["gateway.yaml"] != string(shipped) {
		t.Errorf("ConfigMap %s is not configs/gateway.yaml", cm.Name)
	}
	cfgPath := configArg(t, c.Args)
	mountedFrom := ""
	for _, m := range c.VolumeMounts {
		if filepath.Dir(cfgPath) == filepath.Clean(m.MountPath) {
			mountedFrom = m.Name
		}
	}
	var cmVolume string
	for _, v := range r.deployment.Spec.Template.Spec.Volumes {
		if v.Name == mountedFrom && v.ConfigMap != nil {
			cmVolume = v.ConfigMap.Name
		}
	}
	if cmVolume != cm.Name || filepath.Base(cfgPath) != "gateway.yaml" {
		t.Errorf("--config %s is not the ConfigMap's gateway.yaml (volume %q of ConfigMap %q, generated %q)", cfgPath, mountedFrom, cmVolume, cm.Name)
	}
	env := map[string]string{}
	var names []string
	secretRefs := map[string]bool{}
	for _, e := range c.Env {
		names = append(names, e.Name)
		switch {
		case e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil:
			secretRefs[e.Name] = true
			env[e.Name] = placeholder(e.Name)
		case e.ValueFrom == nil:
			env[e.Name] = e.Value
		default:
			t.Errorf("env %s: only literals and secretKeyRef are expected", e.Name)
		}
	}
	checkEnvNames(t, "the Deployment", names)
	for _, must := range []string{"GATEWAY_ADMIN_TOKEN", "GATEWAY_REDIS_URL", "GATEWAY_LIVE_DATABASE_URL", "GATEWAY_TEST_DATABASE_URL",
		"GATEWAY_HISTORY_DATABASE_URL", "GATEWAY_WEBHOOK_SECRETS_KEY"} {
		if !secretRefs[must] {
			t.Errorf("%s must come from a Secret reference", must)
		}
	}
	tmp := filepath.Join(t.TempDir(), "gateway.yaml")
	if err := os.WriteFile(tmp, []byte(cm.Data["gateway.yaml"]), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(tmp, envOf(env), config.NeedAll)
	if err != nil {
		t.Fatalf("the container's configuration does not load: %v", err)
	}
	return cfg
}

// containerPorts are the container's ports by name.
type containerPorts map[string]int32

// resolve is the number of a port given by number or by name.
func (ports containerPorts) resolve(t *testing.T, p intstr.IntOrString) int32 {
	t.Helper()
	if p.Type == intstr.String {
		n, ok := ports[p.StrVal]
		if !ok {
			t.Errorf("port name %q is no container port", p.StrVal)
		}
		return n
	}
	return p.IntVal
}

// checkPorts checks that the container's ports are the configured
// listeners', and its probes real endpoints on the public one; it returns
// the ports.
func checkPorts(t *testing.T, c corev1.Container, cfg config.Config) containerPorts {
	t.Helper()
	ports := containerPorts{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	if int(ports["http"]) != portOf(t, cfg.Addr) || int(ports["admin"]) != portOf(t, cfg.AdminAddr) || len(ports) != 2 {
		t.Errorf("container ports %v; configured addr %s, adminAddr %s", ports, cfg.Addr, cfg.AdminAddr)
	}
	if h, _, _ := strings.Cut(cfg.AdminAddr, ":"); h != "" && h != "0.0.0.0" {
		t.Errorf("adminAddr %s binds %s: unreachable from the admin Service and the scraper", cfg.AdminAddr, h)
	}
	for name, pr := range map[string]*corev1.Probe{"readiness": c.ReadinessProbe, "liveness": c.LivenessProbe, "startup": c.StartupProbe} {
		if pr == nil || pr.HTTPGet == nil {
			if name != "startup" {
				t.Errorf("%s probe missing or not HTTP", name)
			}
			continue
		}
		if ports.resolve(t, pr.HTTPGet.Port) != ports["http"] {
			t.Errorf("%s probe on port %v, not the public listener", name, pr.HTTPGet.Port)
		}
		if got := servedStatus(t, pr.HTTPGet.Path); got != 200 {
			t.Errorf("%s probe path %s answers %d", name, pr.HTTPGet.Path, got)
		}
	}
	if c.ReadinessProbe.HTTPGet.Path != "/readyz" || c.LivenessProbe.HTTPGet.Path != "/healthz" {
		t.Errorf("readiness on %s, liveness on %s; want /readyz and /healthz", c.ReadinessProbe.HTTPGet.Path, c.LivenessProbe.HTTPGet.Path)
	}
	return ports
}

// checkPod checks that the termination grace covers the drain (readiness
// false for DrainDelay, then up to ShutdownTimeout for requests in flight),
// and that the pod is locked down and sized.
func checkPod(t *testing.T, pod corev1.PodSpec, c corev1.Container, cfg config.Config) {
	t.Helper()
	drain := cfg.DrainDelay + cfg.ShutdownTimeout
	if g := pod.TerminationGracePeriodSeconds; g == nil || time.Duration(*g)*time.Second <= drain {
		t.Errorf("terminationGracePeriodSeconds does not exceed drainDelay + shutdownTimeout = %v", drain)
	}
	// Security: non-root, read-only, nothing to escalate.
	psc, sc := pod.SecurityContext, c.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || sc == nil ||
		sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.Capabilities == nil || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" {
		t.Errorf("security context: pod %+v container %+v", psc, sc)
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Limits.Memory().IsZero() {
		t.Errorf("resources %+v: the HPA needs a CPU request; memory needs a limit", c.Resources)
	}
}

// selects reports whether a selector picks the pods of labels; an empty
// one picks none here.
func selects(labels, sel map[string]string) bool {
	if len(sel) == 0 {
		return false
	}
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// checkServices checks that every object that picks pods picks exactly the
// gateway's, and that the public Service exposes the public port only and
// the admin one is internal (ClusterIP), under names the admin listener
// answers to.
func checkServices(t *testing.T, r rendered, cfg config.Config, ports containerPorts) {
	t.Helper()
	d := r.deployment
	podLabels := d.Spec.Template.Labels
	if !selects(podLabels, d.Spec.Selector.MatchLabels) || !selects(podLabels, r.pdb.Spec.Selector.MatchLabels) || !selects(podLabels, r.netpol.Spec.PodSelector.MatchLabels) {
		t.Errorf("a Deployment, PDB or NetworkPolicy selector misses the pods %v", podLabels)
	}
	var public, admin int
	for _, s := range r.services {
		if !selects(podLabels, s.Spec.Selector) {
			t.Errorf("Service %s selects %v, not the gateway's pods", s.Name, s.Spec.Selector)
		}
		targets := map[int32]bool{}
		for _, p := range s.Spec.Ports {
			targets[ports.resolve(t, p.TargetPort)] = true
		}
		switch {
		case targets[ports["admin"]]:
			admin++
			if len(targets) != 1 || (s.Spec.Type != "" && s.Spec.Type != corev1.ServiceTypeClusterIP) {
				t.Errorf("admin Service %s: type %s, ports %v; want ClusterIP with the admin port only", s.Name, s.Spec.Type, targets)
			}
			// The dashboard calls it by the Service's name: the admin
			// listener must answer to it (another name is refused), with
			// its namespace where the overlay sets one.
			names := []string{s.Name}
			if s.Namespace != "" {
				names = append(names, s.Name+"."+s.Namespace+".svc.cluster.local")
			}
			hosts, _ := invoicing.ParseHosts(cfg.AdminHosts)
			for _, n := range names {
				if !slices.Contains(hosts, n) {
					t.Errorf("admin Service %s: GATEWAY_ADMIN_HOSTS %q lacks %s, the name the dashboard calls", s.Name, cfg.AdminHosts, n)
				}
			}
		case targets[ports["http"]]:
			public++
			if len(targets) != 1 {
				t.Errorf("public Service %s exposes %v; want the public port only", s.Name, targets)
			}
		default:
			t.Errorf("Service %s targets no gateway listener: %v", s.Name, targets)
		}
	}
	if public != 1 || admin != 1 {
		t.Errorf("%d public and %d admin Services, want one of each", public, admin)
	}
}

// checkNetworkPolicy checks that the admin port is open only to selected
// peers.
func checkNetworkPolicy(t *testing.T, r rendered, ports containerPorts) {
	t.Helper()
	adminRules := 0
	for _, rule := range r.netpol.Spec.Ingress {
		for _, p := range rule.Ports {
			if p.Port == nil || ports.resolve(t, *p.Port) != ports["admin"] {
				continue
			}
			adminRules++
			if len(rule.From) == 0 {
				t.Errorf("NetworkPolicy opens the admin port to every source")
			}
			for _, from := range rule.From {
				if from.IPBlock != nil || from.PodSelector == nil || len(from.PodSelector.MatchLabels) == 0 {
					t.Errorf("admin port open to a peer not chosen by pod labels: %+v", from)
				}
			}
		}
		if len(rule.Ports) == 0 {
			t.Errorf("an ingress rule without ports opens the admin port too")
		}
	}
	if adminRules == 0 {
		t.Errorf("no NetworkPolicy rule admits the admin port: the dashboard and the scraper are locked out")
	}
	if len(r.netpol.Spec.PolicyTypes) == 0 || r.netpol.Spec.PolicyTypes[0] != networkingv1.PolicyTypeIngress {
		t.Errorf("NetworkPolicy types %v", r.netpol.Spec.PolicyTypes)
	}
}

// checkScaling checks that the HPA drives the Deployment on CPU and the PDB
// leaves capacity during voluntary disruptions; that production runs a
// released image on enough replicas, every change confirmed by a Redis
// replica; and that no manifest opts out of durability.
func checkScaling(t *testing.T, r rendered, c corev1.Container, cfg config.Config, production bool) {
	t.Helper()
	d, h := r.deployment, r.hpa
	if h.Spec.ScaleTargetRef.Kind != "Deployment" || h.Spec.ScaleTargetRef.Name != d.Name ||
		h.Spec.MinReplicas == nil || *h.Spec.MinReplicas < 2 || h.Spec.MaxReplicas < *h.Spec.MinReplicas ||
		len(h.Spec.Metrics) == 0 || h.Spec.Metrics[0].Resource == nil || h.Spec.Metrics[0].Resource.Name != corev1.ResourceCPU {
		t.Errorf("HPA %+v", h.Spec)
	}
	if r.pdb.Spec.MaxUnavailable == nil && r.pdb.Spec.MinAvailable == nil {
		t.Error("PDB sets neither maxUnavailable nor minAvailable")
	}
	if production {
		img := c.Image
		if i := strings.LastIndex(img, ":"); i < 0 || strings.Contains(img[i:], "/") || img[i+1:] == "latest" || img[i+1:] == "dev" {
			t.Errorf("production image %q is not pinned to a release tag", img)
		}
		if d.Namespace == "" || d.Spec.Replicas == nil || *d.Spec.Replicas < *h.Spec.MinReplicas {
			t.Errorf("production: namespace %q, replicas %v below the HPA minimum", d.Namespace, d.Spec.Replicas)
		}
		// Every change confirmed by a Redis replica, whatever Redis
		// reports at start.
		if n, auto, err := config.ParseMinReplicas(cfg.RedisMinReplicas); err != nil || auto || n < 1 {
			t.Errorf("production: redisMinReplicas %q; want at least one replica, set", cfg.RedisMinReplicas)
		}
	}
	// Never an opt-out, nor eviction allowed.
	if n, auto, _ := config.ParseMinReplicas(cfg.RedisMinReplicas); !auto && n == 0 || cfg.RedisAllowEviction {
		t.Errorf("redisMinReplicas %q, redisAllowEviction %v: the shipped manifests must keep the durable choice", cfg.RedisMinReplicas, cfg.RedisAllowEviction)
	}
}

// configArg is the value of --config in the container's arguments.
func configArg(t *testing.T, args []string) string {
	t.Helper()
	for i, a := range args {
		if a == "--config" && i+1 < len(args) {
			return args[i+1]
		}
		if v, ok := strings.CutPrefix(a, "--config="); ok {
			return v
		}
	}
	t.Fatalf("container args %v have no --config", args)
	return ""
}
