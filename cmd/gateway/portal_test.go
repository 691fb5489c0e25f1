package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/gateway/apidocs"
	"github.com/invoicing-ao/gateway/internal/testenv"
)

// The developer portal's checks that need tools from outside Go, all against
// one demo gateway: the document lints clean (Spectral), the Postman
// collection runs green (Newman), a headless Chromium renders the explorer
// with the six operations and the webhooks, and the code samples of the
// document, the Webhooks guide's included, work as written. Each tool is skipped when missing, except under CI=true, where
// .ci/test has installed them and a missing one fails.

// npm tools, pinned (toolchain notes), installed once under the user's cache.
const (
	spectralPkg = "@stoplight/spectral-cli@6.16.3"
	newmanPkg   = "newman@6.2.2"
)

func TestPortal(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short")
	}
	base, key, company := startDemo(t)

	t.Run("SpectralLint", func(t *testing.T) {
		bin := npmTool(t, spectralPkg, "spectral")
		// The source file; TestJSONIsTheDocument shows the served JSON says the same.
		out, err := exec.Command(bin, "lint", "--ruleset", "../../gateway/apidocs/.spectral.yaml", "--fail-severity=hint", "../../gateway/apidocs/openapi.yaml").CombinedOutput()
		if err != nil {
			t.Errorf("spectral lint: %v\n%s", err, out)
		}
	})

	t.Run("NewmanCollection", func(t *testing.T) {
		bin := npmTool(t, newmanPkg, "newman")
		coll := filepath.Join(t.TempDir(), "collection.json")
		if err := os.WriteFile(coll, fetch(t, base+"/api/collection.json"), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "run", coll, "--bail", "--color", "off", "--disable-unicode",
			"--env-var", "baseUrl="+base, "--env-var", "apiKey="+key, "--env-var", "companyId="+company)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("newman: %v\n%s", err, out)
		}
		// Newman's summary table: every request ran, and assertions ran.
		if m := regexp.MustCompile(`assertions\s*[│|]\s*(\d+)\s*[│|]\s*0\s*[│|]`).FindSubmatch(out); m == nil || string(m[1]) == "0" {
			t.Errorf("no passing assertions in newman's summary:\n%s", out)
		}
	})

	t.Run("ChromiumExplorer", func(t *testing.T) { checkExplorer(t, base) })

	t.Run("CodeSamples", func(t *testing.T) {
		runCodeSamples(t, base, key, company)
	})

	t.Run("WebhookGuide", func(t *testing.T) {
		runWebhookGuide(t, base, key, company)
	})
}

// checkExplorer renders the API explorer in a headless Chromium: the
// operations, the example company, the webhooks and their guide.
func checkExplorer(t *testing.T, base string) {
	bin := tool(t, "chromium")
	cmd := exec.Command(bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir="+t.TempDir(), "--virtual-time-budget=15000", "--dump-dom", base+"/api/docs")
	cmd.Stderr = io.Discard
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Patience)
	defer cancel()
	dom, err := exec.CommandContext(ctx, cmd.Path, cmd.Args[1:]...).Output()
	if err != nil {
		t.Fatalf("chromium: %v", err)
	}
	// Each operation is a section whose id names its method and path and
	// whose label is its summary.
	found := map[string]bool{}
	re := regexp.MustCompile(`id="[^"]*/tag/[a-z]+/(GET|POST)(/[^"]*)"[^>]*label="([^"]+)"`)
	for _, m := range re.FindAllSubmatch(dom, -1) {
		found[string(m[1])+" "+string(m[2])+" "+string(m[3])] = true
	}
	for _, op := range []string{
		"GET /api/v1/v1/invoices List invoices", "GET /api/v1/v1/invoices/{id} Get invoice", "GET /api/v1/v1/clients List clients",
		"GET /api/v1/v1/clients/{id} Get client", "POST /api/v1/v1/clients Create client", "GET /api/v1/v1/events List events",
	} {
		if !found[op] {
			t.Errorf("the explorer does not show %q; it shows %v", op, found)
		}
	}
	// The company field of the Authentication panel shows an example id
	// (Scalar's own placeholder is a joke in base64).
	if !regexp.MustCompile(`<input [^>]*type="text" value="` + apidocs.ExampleCompanyID + `"`).Match(dom) {
		t.Errorf("the explorer's X-Company-Id field does not show the example company id %s", apidocs.ExampleCompanyID)
	}
	// The webhooks, each under its name without dots, and their guide.
	for _, name := range []string{"invoice.issued", "invoice.paid", "invoice.cancelled", "invoice.overdue",
		"invoice.transmission.updated", "client.created", "client.updated"} {
		if !strings.Contains(string(dom), `id="api/webhook/POST/`+strings.ReplaceAll(name, ".", "")+`"`) {
			t.Errorf("the explorer does not show the webhook %s", name)
		}
	}
	for _, want := range []string{`Request Example for post /api/v1/v1/clients`, `-H "X-Company-Id: $COMPANY_ID"`, `id="api/description/rate-limits"`,
		`id="api/description/webhooks"`} {
		if !strings.Contains(string(dom), want) && !strings.Contains(stripTags(string(dom)), want) {
			t.Errorf("the explorer does not show %q", want)
		}
	}
}

// startDemo runs `gateway demo` in-process on free ports and returns its
// address, the full-access LIVE key of company A and A's id.
func startDemo(t *testing.T) (base, key, company string) {
	t.Helper()
	return parseDemo(t, runDemo(t))
}

// parseDemo reads the demo's address, company A's LIVE key and A's id from
// what it printed.
func parseDemo(t *testing.T, s string) (base, key, company string) {
	t.Helper()
	m := regexp.MustCompile(`ready on (http://\S+)`).FindStringSubmatch(s)
	k := regexp.MustCompile(`LIVE full access\s+company A\s+(igw_live_\S+)`).FindStringSubmatch(s)
	c := regexp.MustCompile(`Companies: A (\S+)`).FindStringSubmatch(s)
	if m == nil || k == nil || c == nil {
		t.Fatalf("cannot read the demo's address, key and company:\n%s", s)
	}
	return m[1], k[1], c[1]
}

func fetch(t *testing.T, url string) []byte {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("GET %s: %d %v", url, res.StatusCode, err)
	}
	return b
}

// tool finds a program, skipping the test without it unless under CI.
func tool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is required under CI (.ci/test installs it)", name)
		}
		t.Skipf("%s not installed", name)
	}
	return p
}

// npmTool installs a pinned npm package once under the user's cache
// directory (never in the repository) and returns its binary.
func npmTool(t *testing.T, pkg, bin string) string {
	t.Helper()
	npm := tool(t, "npm")
	tool(t, "node")
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	dir := npmCached(t, filepath.Join(cache, "gateway-npm", strings.NewReplacer("@", "", "/", "-").Replace(pkg)), func(into string) ([]byte, error) {
		return exec.Command(npm, "install", "--prefix", into, "--no-audit", "--no-fund", "--loglevel=error", pkg).CombinedOutput()
	})
	return filepath.Join(dir, "node_modules", ".bin", bin)
}

var tagRe = regexp.MustCompile(`<[^>]+>`)

func stripTags(s string) string {
	return strings.Join(strings.Fields(tagRe.ReplaceAllString(s, " ")), " ")
}

// runCodeSamples runs every operation's code samples against the demo, as
// an integrator would paste them, with the environment they name.
func runCodeSamples(t *testing.T, base, key, company string) {
	var doc struct {
		Paths map[string]map[string]struct {
			OperationID string                                 `json:"operationId"`
			Samples     []struct{ Lang, Label, Source string } `json:"x-codeSamples"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(fetch(t, base+"/api/openapi.json"), &doc); err != nil {
		t.Fatal(err)
	}
	ids := func(path string) string {
		req, _ := http.NewRequest("GET", base+path, nil)
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("X-Company-Id", company)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var p struct{ Data []struct{ ID string } }
		if err := json.NewDecoder(res.Body).Decode(&p); err != nil || len(p.Data) == 0 {
			t.Fatalf("%s: %v", path, err)
		}
		return p.Data[0].ID
	}
	env := append(os.Environ(), "BASE_URL="+base, "API_KEY="+key, "COMPANY_ID="+company,
		"INVOICE_ID="+ids("/api/v1/v1/invoices?pageSize=1"), "CLIENT_ID="+ids("/api/v1/v1/clients?pageSize=1"))
	runners := map[string]func(dir, src string) *exec.Cmd{
		"Shell": func(dir, src string) *exec.Cmd {
			// A sample fails on an HTTP error, as the other languages' do,
			// so that a script that copies it notices.
			if !strings.Contains(src, "curl -sS --fail-with-body ") {
				t.Errorf("a curl sample does not fail visibly (-sS --fail-with-body):\n%s", src)
			}
			return exec.Command("bash", "-c", "set -o pipefail; "+strings.TrimSpace(src))
		},
		"JavaScript": func(dir, src string) *exec.Cmd {
			return exec.Command("node", "--input-type=module", "-e", src)
		},
		"Python": func(dir, src string) *exec.Cmd { return exec.Command("python3", "-c", src) },
		"Go": func(dir, src string) *exec.Cmd {
			f := filepath.Join(dir, "main.go")
			if err := os.WriteFile(f, []byte(src), 0o600); err != nil {
				t.Fatal(err)
			}
			return exec.Command("go", "run", f)
		},
	}
	need := map[string]string{"Shell": "curl", "JavaScript": "node", "Python": "python3", "Go": "go"}
	noRequests := exec.Command("python3", "-c", "import requests").Run() != nil
	for path, item := range doc.Paths {
		for _, op := range item {
			for _, s := range op.Samples {
				t.Run(op.OperationID+"/"+s.Lang, func(t *testing.T) {
					tool(t, need[s.Lang])
					if s.Lang == "Python" && noRequests {
						if os.Getenv("CI") == "true" {
							t.Fatal("python3 requests is required under CI (.ci/test installs python3-requests)")
						}
						t.Skip("python3 requests not installed")
					}
					dir := t.TempDir()
					cmd := runners[s.Lang](dir, s.Source)
					cmd.Env, cmd.Dir = env, dir
					out, err := cmd.CombinedOutput()
					if err != nil {
						t.Errorf("%s %s sample: %v\n%s\n%s", path, s.Lang, err, s.Source, out)
					}
				})
			}
		}
	}
}

// runDemo runs `gateway demo` in-process on free ports until the test ends
// (it must then stop, with exit code 0, within 20 s) and returns what the
// demo printed once ready.
func runDemo(t *testing.T) string {
	t.Helper()
	return runDemoLive(t).String()
}

// runDemoLive runs the demo until the test ends and returns what it prints,
// as it prints it; it returns once the demo is ready.
func runDemoLive(t *testing.T) *testenv.SyncBuffer {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var out, errb testenv.SyncBuffer
	done := make(chan int, 1)
	env := envOf(map[string]string{"GATEWAY_ADDR": "127.0.0.1:0", "GATEWAY_ADMIN_ADDR": "127.0.0.1:0"})
	go func() { done <- run(ctx, []string{"demo", "--data", t.TempDir()}, &out, &errb, env) }()
	t.Cleanup(func() {
		cancel()
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("demo exit %d: %s", code, errb.String())
			}
		case <-time.After(20 * time.Second):
			t.Error("demo did not stop")
		}
	})
	deadline := time.After(60 * time.Second)
	for !strings.Contains(out.String(), "Press Ctrl+C") {
		select {
		case code := <-done:
			t.Fatalf("demo exited %d: %s %s", code, out.String(), errb.String())
		case <-deadline:
			t.Fatalf("demo not ready: %s %s", out.String(), errb.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	return &out
}
