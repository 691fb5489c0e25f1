package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/invoicing-ao/gateway/cmd/gateway/internal/config"
	"github.com/invoicing-ao/gateway/internal/seal"
)

// The scheduled export, as both kustomizations render it: one run at a
// time, the gateway's image and configuration, a command line the binary
// accepts as `gateway state export` with its file on the job's volume and
// encrypted to a recipient from the Secret, the settings it needs from
// Secret references, and the pod as locked down as the gateway's.
func TestKubernetesStateExport(t *testing.T) {
	_, rcpt, err := seal.Generate()
	if err != nil {
		t.Fatal(err)
	}
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
		cmd := lookup(words)
		if len(c.Command) != 1 || c.Command[0] != "/gateway" || cmd == nil || cmd.name != "state export" {
			t.Fatalf("%s: %v %v is not gateway state export", dir, c.Command, c.Args)
		}
		fs, _, cfgFlag := cmd.newFlagSet()
		if _, err := parseFlags(fs, words[2:]); err != nil {
			t.Fatalf("%s: %s: %v", dir, args, err)
		}
		out := fs.Lookup("out").Value.String()
		mounted := map[string]string{}
		for _, m := range c.VolumeMounts {
			mounted[m.Name] = m.MountPath
		}
		if !strings.HasPrefix(out, mounted["exports"]+"/") || mounted["exports"] == "" {
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
		// The configuration the job would load, with its Secret's values.
		tmp := filepath.Join(t.TempDir(), "gateway.yaml")
		if err := os.WriteFile(tmp, []byte(r.configMaps[0].Data["gateway.yaml"]), 0o600); err != nil {
			t.Fatal(err)
		}
		if *cfgFlag != "/configs/gateway.yaml" || mounted["config"] != "/configs" {
			t.Errorf("%s: --config %s, config mounted at %s", dir, *cfgFlag, mounted["config"])
		}
		if _, err := config.Load(tmp, envOf(env), cmd.needs); err != nil {
			t.Errorf("%s: the export's configuration does not load: %v", dir, err)
		}
		sc, psc := c.SecurityContext, pod.SecurityContext
		if sc == nil || psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
			sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || psc.FSGroup == nil {
			t.Errorf("%s: the export's pod is not locked down as the gateway's (and fsGroup for its volume)", dir)
		}
	}
}
