package main

import (
	"bufio"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// runWebhookGuide checks the portal's Webhooks guide (a section of the
// document's description) as an integrator would use it: its example
// delivery verifies with its secret, the library versions it names are the
// ones tested here, and its receivers in JavaScript, Python and Go, run as
// written, accept the gateway's deliveries once each and refuse the others.
func runWebhookGuide(t *testing.T, base, key, company string) {
	var doc struct {
		Info struct{ Description string } `json:"info"`
	}
	if err := json.Unmarshal(fetch(t, base+"/api/openapi.json"), &doc); err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?s)\n## Webhooks\n(.*?)\n## `).FindStringSubmatch(doc.Info.Description)
	if m == nil {
		t.Fatal("no Webhooks section in the document's description")
	}
	guide := m[1]
	blocks := map[string]string{}
	for _, b := range regexp.MustCompile("(?s)```([a-z]+)\n(.*?)```").FindAllStringSubmatch(guide, -1) {
		blocks[b[1]] = b[2]
	}
	t.Run("ExampleDelivery", func(t *testing.T) { checkExampleDelivery(t, guide, blocks["http"]) })
	t.Run("LibraryVersions", func(t *testing.T) { checkLibraryVersions(t, guide) })

	inv, cl := demoInvoiceAndClient(t, base, key, company)
	var ids [2]struct{ ID string }
	if json.Unmarshal(inv, &ids[0]) != nil || json.Unmarshal(cl, &ids[1]) != nil {
		t.Fatal("the demo's invoice or client has no id")
	}
	want := "invoice.paid " + ids[0].ID + "\nclient.updated " + ids[1].ID
	receivers := map[string]func(t *testing.T, src string) *exec.Cmd{
		"javascript": javascriptReceiver, "python": pythonReceiver, "go": goReceiver,
	}
	for _, lang := range []string{"javascript", "python", "go"} {
		t.Run("Receiver/"+lang, func(t *testing.T) {
			src := blocks[lang]
			if src == "" {
				t.Fatalf("no %s sample in the guide", lang)
			}
			cmd := receivers[lang](t, src)
			if cmd == nil {
				return
			}
			secret := webhookSecret(t)
			cmd.Env = append(os.Environ(), "WEBHOOK_SECRET="+secret)
			port := freePort(t)
			out := startReceiver(t, cmd, port)
			if got := strings.Join(deliverToReceiver(t, port, out, secret, inv, cl), "\n"); got != want {
				t.Errorf("the %s sample printed\n%s\nwant\n%s\n(all output:\n%s)", lang, got, want, out.String())
			}
		})
	}
}

// checkExampleDelivery: the guide's example delivery verifies with the
// secret the guide gives.
func checkExampleDelivery(t *testing.T, guide, example string) {
	secret := regexp.MustCompile("`(whsec_[A-Za-z0-9+/=]+)`").FindStringSubmatch(guide)
	head, body, ok := strings.Cut(example, "\n\n")
	if secret == nil || !ok {
		t.Fatalf("no secret or no example delivery in the guide")
	}
	h := http.Header{}
	sc := bufio.NewScanner(strings.NewReader(head))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ": "); ok {
			h.Add(k, v)
		}
	}
	wh, err := standardwebhooks.NewWebhook(secret[1])
	if err != nil {
		t.Fatal(err)
	}
	// It was sent in 2026: its signature still holds, its age does not.
	if err := wh.VerifyIgnoringTimestamp([]byte(strings.TrimSuffix(body, "\n")), h); err != nil {
		t.Errorf("the guide's example delivery does not verify with its secret: %v\n%s", err, example)
	}
}

// checkLibraryVersions: the library versions the guide names are the ones
// tested here (the TypeScript program's, go.mod's).
func checkLibraryVersions(t *testing.T, guide string) {
	flat := strings.Join(strings.Fields(guide), " ") // as the paragraphs read
	pkg, err := os.ReadFile(filepath.Join("..", "..", "client", "typescript", "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	var p struct{ Dependencies map[string]string }
	if err := json.Unmarshal(pkg, &p); err != nil {
		t.Fatal(err)
	}
	if want := "`standardwebhooks` (" + p.Dependencies["standardwebhooks"] + ")"; !strings.Contains(flat, want) {
		t.Errorf("the guide does not name npm's %s, the version tested", want)
	}
	if v := moduleVersion(t, swLibrary); !strings.Contains(flat, "`"+swLibrary+"` ("+v+")") {
		t.Errorf("the guide does not name the Go library's version that go.mod pins (%s)", v)
	}
}

// javascriptReceiver runs the JavaScript sample with Node, which resolves
// standardwebhooks from the TypeScript program's node_modules: the version
// its package.json pins.
func javascriptReceiver(t *testing.T, src string) *exec.Cmd {
	dir := typescriptProject(t)
	if err := os.WriteFile(filepath.Join(dir, "receiver.mjs"), []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(tool(t, "node"), "receiver.mjs")
	cmd.Dir = dir
	return cmd
}

// pythonReceiver runs the Python sample, or parses it only where python3
// has no standardwebhooks (nil).
func pythonReceiver(t *testing.T, src string) *exec.Cmd {
	py := tool(t, "python3")
	if out, err := exec.Command(py, "-c", "import ast, sys; ast.parse(sys.stdin.read())").CombinedOutput(); err != nil {
		t.Fatalf("the Python sample does not parse: %v\n%s", err, out)
	}
	if exec.Command(py, "-c", "import standardwebhooks").Run() != nil {
		// PyPI is out of reach of the machines this runs on, and no
		// distribution packages the library: the sample is parsed,
		// not run. Not a skip: nothing here can install it.
		t.Log("python3 has no standardwebhooks (pip install standardwebhooks): the sample was parsed only")
		return nil
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "receiver.py"), []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(py, "receiver.py")
	cmd.Dir = dir
	return cmd
}

// goReceiver builds the Go sample as a module of its own requiring the
// library at go.mod's version, from the module cache (go.sum's lines for
// it copied).
func goReceiver(t *testing.T, src string) *exec.Cmd {
	dir := t.TempDir()
	sum, err := os.ReadFile(filepath.Join("..", "..", "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(string(sum), "\n") {
		if strings.HasPrefix(l, swLibrary+" ") {
			lines = append(lines, l)
		}
	}
	mod := "module receiver\n\ngo 1.26\n\nrequire " + swLibrary + " " + moduleVersion(t, swLibrary) + "\n"
	for name, body := range map[string]string{"main.go": src, "go.mod": mod, "go.sum": strings.Join(lines, "\n") + "\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	build := exec.Command(tool(t, "go"), "build", "-o", "receiver", ".")
	build.Dir, build.Env = dir, append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("the Go sample does not build: %v\n%s", err, out)
	}
	return exec.Command(filepath.Join(dir, "receiver"))
}

// swLibrary is Standard Webhooks' Go module (the Go sample's library).
const swLibrary = "github.com/standard-webhooks/standard-webhooks/libraries"

// moduleVersion is the version of module that the repository's go.mod pins.
func moduleVersion(t *testing.T, module string) string {
	t.Helper()
	mod, err := os.ReadFile(filepath.Join("..", "..", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	v := regexp.MustCompile(regexp.QuoteMeta(module) + ` (v\S+)`).FindSubmatch(mod)
	if v == nil {
		t.Fatalf("go.mod does not require %s", module)
	}
	return string(v[1])
}
