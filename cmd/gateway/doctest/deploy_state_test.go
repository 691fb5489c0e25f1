package doctest

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/invoicing-ao/gateway/internal/seal"
	"github.com/invoicing-ao/gateway/internal/testenv"
)

// The scheduled export, as both kustomizations render it: one run at a
// time, the gateway's image and configuration, a command line the binary
// accepts as `gateway state export` with its file on the job's volume and
// encrypted to a recipient from the Secret, the settings it needs from
// Secret references (with which its configuration loads: the binary gets
// past its settings), and the pod as locked down as the gateway's.
func TestKubernetesStateExport(t *testing.T) {
	t.Parallel()
	_, rcpt, err := seal.Generate()
	if err != nil {
		t.Fatal(err)
	}
	cli := gatewayCLIOf(t)
	for _, dir := range []string{"deploy/k8s/base", "deploy/k8s/overlays/production"} {
		r := render(t, filepath.Join(repoRoot, dir))
		cj := r.export
		if cj == nil || len(r.pvcs) != 1 {
			t.Fatalf("%s: no CronJob of the export, or not its one volume claim", dir)
		}
		if cj.Spec.ConcurrencyPolicy != "Forbid" || cj.Spec.Schedule == "" {
			t.Errorf("%s: the export may run twice at once (%q) or has no schedule", dir, cj.Spec.ConcurrencyPolicy)
		}
		pod := cj.Spec.JobTemplate.Spec.Template.Spec
		if len(pod.Containers) != 1 {
			t.Fatalf("%s: %d containers", dir, len(pod.Containers))
		}
		c := pod.Containers[0]
		if c.Image != r.deployment.Spec.Template.Spec.Containers[0].Image {
			t.Errorf("%s: the export runs %s, the gateway %s", dir, c.Image, r.deployment.Spec.Template.Spec.Containers[0].Image)
		}
		env, names := map[string]string{}, []string{}
		for _, e := range c.Env {
			if e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
				t.Errorf("%s: env %s does not come from a Secret", dir, e.Name)
			}
			if strings.HasPrefix(e.Name, "GATEWAY_") {
				names = append(names, e.Name)
			}
			env[e.Name] = placeholder(e.Name)
		}
		checkEnvNames(t, dir+"'s export", names)
		args := strings.Join(c.Args, " ")
		if !strings.Contains(args, "$(STATE_EXPORT_RECIPIENT)") || env["STATE_EXPORT_RECIPIENT"] == "" {
			t.Errorf("%s: the export is not encrypted to the Secret's recipient: %s", dir, args)
		}
		args = strings.ReplaceAll(args, "$(STATE_EXPORT_RECIPIENT)", rcpt)
		words := strings.Fields(args)
		cmd, ok := cli.lookup(words)
		if len(c.Command) != 1 || c.Command[0] != "/gateway" || !ok || cmd.name != "state export" {
			t.Fatalf("%s: %v %v is not gateway state export", dir, c.Command, c.Args)
		}
		if err := cli.check(t, "gateway "+args); err != nil {
			t.Fatalf("%s: %s: %v", dir, args, err)
		}
		set, _, _ := cmd.parse(words[2:])
		mounted := map[string]string{}
		for _, m := range c.VolumeMounts {
			mounted[m.Name] = m.MountPath
		}
		if out := set["out"]; !strings.HasPrefix(out, mounted["exports"]+"/") || mounted["exports"] == "" {
			t.Errorf("%s: --out %s is not on the exports volume (%v)", dir, out, mounted)
		}
		for _, v := range pod.Volumes {
			if v.Name == "exports" && (v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != r.pvcs[0].Name) {
				t.Errorf("%s: the exports volume is not the claim %s", dir, r.pvcs[0].Name)
			}
			if v.Name == "config" && (v.ConfigMap == nil || v.ConfigMap.Name != r.configMaps[0].Name) {
				t.Errorf("%s: the export does not read the gateway's ConfigMap", dir)
			}
		}
		if set["config"] != "/configs/gateway.yaml" || mounted["config"] != "/configs" {
			t.Errorf("%s: --config %s, config mounted at %s", dir, set["config"], mounted["config"])
		}
		checkExportLoads(t, dir, words, r.configMaps[0].Data["gateway.yaml"], env)
		sc, psc := c.SecurityContext, pod.SecurityContext
		if sc == nil || psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
			sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || psc.FSGroup == nil {
			t.Errorf("%s: the export's pod is not locked down as the gateway's (and fsGroup for its volume)", dir)
		}
	}
}

// checkExportLoads runs the export's command line, with its configuration
// file and its Secret's values, and sees it get past its settings to Redis:
// the one setting changed is Redis's URL, to a port nothing listens on, so
// the run stops there, having written nothing.
func checkExportLoads(t *testing.T, dir string, words []string, cfgFile string, env map[string]string) {
	t.Helper()
	tmp := filepath.Join(t.TempDir(), "gateway.yaml")
	if err := os.WriteFile(tmp, []byte(cfgFile), 0o600); err != nil {
		t.Fatal(err)
	}
	args := slices.Clone(words)
	for i, w := range args {
		if w == "--config" && i+1 < len(args) {
			args[i+1] = tmp
		}
	}
	redisURL := "redis://127.0.0.1:" + testenv.ClosedPort(t) + "/0"
	vars := []string{"GATEWAY_REDIS_URL=" + redisURL}
	for k, v := range env {
		if k != "GATEWAY_REDIS_URL" {
			vars = append(vars, k+"="+v)
		}
	}
	code, _, errs := runGateway(t, vars, args...)
	if want := "gateway: Redis (setting GATEWAY_REDIS_URL (redisURL) = " + redisURL + ")"; code != 1 || !strings.Contains(errs, want) {
		t.Errorf("%s: the export's configuration does not load: exit %d, want 1 with %q:\n%s", dir, code, want, errs)
	}
}
