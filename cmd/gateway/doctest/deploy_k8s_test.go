package doctest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
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
	t.Parallel()
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
	t.Parallel()
	for _, dir := range []string{"base", "overlays/production"} {
		t.Run(dir, func(t *testing.T) {
			checkManifests(t, render(t, filepath.Join(repoRoot, "deploy/k8s", dir)), dir == "overlays/production")
		})
	}
}
