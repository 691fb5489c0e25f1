package doctest

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/invoicing-ao/gateway/cmd/gateway/internal/config"
	"github.com/invoicing-ao/gateway/gateway"
)

// rendered is one kustomization's output, each object decoded strictly into
// its Kubernetes API type.
type rendered struct {
	deployment *appsv1.Deployment
	services   []*corev1.Service
	configMaps []*corev1.ConfigMap
	hpa        *autoscalingv2.HorizontalPodAutoscaler
	pdb        *policyv1.PodDisruptionBudget
	netpol     *networkingv1.NetworkPolicy
	export     *batchv1.CronJob // the scheduled export (deploy_state_test.go)
	pvcs       []*corev1.PersistentVolumeClaim
}

// render builds dir as `kubectl apply -k` and `kustomize build` do, with
// the default load restrictions (no file outside the kustomization's root),
// and decodes every object strictly: an unknown or misplaced field fails, as
// the API server would refuse it.
func render(t *testing.T, dir string) rendered {
	t.Helper()
	opts := krusty.MakeDefaultOptions()
	if opts.LoadRestrictions != types.LoadRestrictionsRootOnly {
		t.Fatalf("krusty's default load restrictions are %v, not kubectl's", opts.LoadRestrictions)
	}
	m, err := krusty.MakeKustomizer(opts).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	var out rendered
	for _, res := range m.Resources() {
		b, err := res.AsYAML()
		if err != nil {
			t.Fatal(err)
		}
		gvk := res.GetGvk()
		kind := gvk.Group + "/" + gvk.Version + "/" + gvk.Kind
		var obj any
		switch kind {
		case "apps/v1/Deployment":
			if out.deployment != nil {
				t.Fatalf("%s: two Deployments", dir)
			}
			out.deployment = &appsv1.Deployment{}
			obj = out.deployment
		case "/v1/Service":
			s := &corev1.Service{}
			out.services = append(out.services, s)
			obj = s
		case "/v1/ConfigMap":
			c := &corev1.ConfigMap{}
			out.configMaps = append(out.configMaps, c)
			obj = c
		case "autoscaling/v2/HorizontalPodAutoscaler":
			out.hpa = &autoscalingv2.HorizontalPodAutoscaler{}
			obj = out.hpa
		case "policy/v1/PodDisruptionBudget":
			out.pdb = &policyv1.PodDisruptionBudget{}
			obj = out.pdb
		case "networking.k8s.io/v1/NetworkPolicy":
			out.netpol = &networkingv1.NetworkPolicy{}
			obj = out.netpol
		case "batch/v1/CronJob":
			out.export = &batchv1.CronJob{}
			obj = out.export
		case "/v1/PersistentVolumeClaim":
			c := &corev1.PersistentVolumeClaim{}
			out.pvcs = append(out.pvcs, c)
			obj = c
		case "/v1/Secret":
			t.Fatalf("%s renders a Secret (%s): secret values are never committed; reference them", dir, res.GetName())
		default:
			t.Fatalf("%s renders a %s, which this test does not check: add it", dir, kind)
		}
		if err := yaml.UnmarshalStrict(b, obj); err != nil {
			t.Fatalf("%s: %s %s does not decode strictly: %v", dir, kind, res.GetName(), err)
		}
	}
	if out.deployment == nil || out.hpa == nil || out.pdb == nil || out.netpol == nil || len(out.configMaps) != 1 {
		t.Fatalf("%s: missing objects: %+v", dir, out)
	}
	return out
}

// The ConfigMap's file is a copy of configs/gateway.yaml inside the base
// (kustomize reads nothing outside a kustomization's root by default): it
// must stay the shipped file, byte for byte.
func TestKubernetesConfigIsTheShippedOne(t *testing.T) {
	shipped, err := os.ReadFile(shippedCfg)
	if err != nil {
		t.Fatal(err)
	}
	copied, err := os.ReadFile(filepath.Join(repoRoot, "deploy/k8s/base/gateway.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if string(copied) != string(shipped) {
		t.Fatal("deploy/k8s/base/gateway.yaml differs from configs/gateway.yaml: cp configs/gateway.yaml deploy/k8s/base/gateway.yaml")
	}
	// kubectl's own kustomize, where kubectl is installed, as the README
	// runs it (no cluster needed to render).
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Log("kubectl not installed: rendered with the kustomize library only")
		return
	}
	out, err := exec.Command(kubectl, "kustomize", filepath.Join(repoRoot, "deploy/k8s/overlays/production")).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "kind: ConfigMap") {
		t.Fatalf("kubectl kustomize deploy/k8s/overlays/production: %v\n%s", err, out)
	}
}

func TestKubernetesManifests(t *testing.T) {
	for _, dir := range []string{"base", "overlays/production"} {
		t.Run(dir, func(t *testing.T) {
			checkManifests(t, render(t, filepath.Join(repoRoot, "deploy/k8s", dir)), dir == "overlays/production")
		})
	}
}

func checkManifests(t *testing.T, r rendered, production bool) {
	d := r.deployment
	pod := d.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(pod.Containers))
	}
	c := pod.Containers[0]

	// The configuration the container runs with: the ConfigMap's file (which
	// must be configs/gateway.yaml itself) under the container's literal
	// environment, secrets standing in by placeholders.
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
	for _, v := range pod.Volumes {
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
	for _, must := range []string{"GATEWAY_ADMIN_TOKEN", "GATEWAY_REDIS_URL", "GATEWAY_LIVE_DATABASE_URL", "GATEWAY_TEST_DATABASE_URL", "GATEWAY_WEBHOOK_SECRETS_KEY"} {
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

	// Ports: the container's are the configured listeners'.
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	if int(ports["http"]) != portOf(t, cfg.Addr) || int(ports["admin"]) != portOf(t, cfg.AdminAddr) || len(ports) != 2 {
		t.Errorf("container ports %v; configured addr %s, adminAddr %s", ports, cfg.Addr, cfg.AdminAddr)
	}
	if h, _, _ := strings.Cut(cfg.AdminAddr, ":"); h != "" && h != "0.0.0.0" {
		t.Errorf("adminAddr %s binds %s: unreachable from the admin Service and the scraper", cfg.AdminAddr, h)
	}
	resolve := func(p intstr.IntOrString) int32 {
		if p.Type == intstr.String {
			n, ok := ports[p.StrVal]
			if !ok {
				t.Errorf("port name %q is no container port", p.StrVal)
			}
			return n
		}
		return p.IntVal
	}

	// Probes: real endpoints on the public listener.
	for name, pr := range map[string]*corev1.Probe{"readiness": c.ReadinessProbe, "liveness": c.LivenessProbe, "startup": c.StartupProbe} {
		if pr == nil || pr.HTTPGet == nil {
			if name != "startup" {
				t.Errorf("%s probe missing or not HTTP", name)
			}
			continue
		}
		if resolve(pr.HTTPGet.Port) != ports["http"] {
			t.Errorf("%s probe on port %v, not the public listener", name, pr.HTTPGet.Port)
		}
		if got := servedStatus(t, pr.HTTPGet.Path); got != 200 {
			t.Errorf("%s probe path %s answers %d", name, pr.HTTPGet.Path, got)
		}
	}
	if c.ReadinessProbe.HTTPGet.Path != "/readyz" || c.LivenessProbe.HTTPGet.Path != "/healthz" {
		t.Errorf("readiness on %s, liveness on %s; want /readyz and /healthz", c.ReadinessProbe.HTTPGet.Path, c.LivenessProbe.HTTPGet.Path)
	}

	// Termination grace covers the drain: readiness false for DrainDelay,
	// then up to ShutdownTimeout for requests in flight.
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

	// Selectors: every object that picks pods picks exactly the gateway's.
	podLabels := d.Spec.Template.Labels
	matches := func(sel map[string]string) bool {
		if len(sel) == 0 {
			return false
		}
		for k, v := range sel {
			if podLabels[k] != v {
				return false
			}
		}
		return true
	}
	if !matches(d.Spec.Selector.MatchLabels) || !matches(r.pdb.Spec.Selector.MatchLabels) || !matches(r.netpol.Spec.PodSelector.MatchLabels) {
		t.Errorf("a Deployment, PDB or NetworkPolicy selector misses the pods %v", podLabels)
	}

	// Services: the public one exposes the public port only; the admin one
	// is internal (ClusterIP).
	var public, admin int
	for _, s := range r.services {
		if !matches(s.Spec.Selector) {
			t.Errorf("Service %s selects %v, not the gateway's pods", s.Name, s.Spec.Selector)
		}
		targets := map[int32]bool{}
		for _, p := range s.Spec.Ports {
			targets[resolve(p.TargetPort)] = true
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
			hosts, _ := gateway.ParseAdminHosts(cfg.AdminHosts)
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

	// NetworkPolicy: the admin port only from selected peers.
	adminRules := 0
	for _, rule := range r.netpol.Spec.Ingress {
		for _, p := range rule.Ports {
			if p.Port == nil || resolve(*p.Port) != ports["admin"] {
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

	// Scaling: the HPA drives this Deployment on CPU; the PDB leaves
	// capacity during voluntary disruptions.
	h := r.hpa
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
