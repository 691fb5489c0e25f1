package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/invoicing-ao/gateway/client"
)

// The integrator's view, against the demo as `gateway demo` runs it: the Go
// client of this repository (client/), and a TypeScript program whose types
// openapi-typescript generates from the served document, type-checked with
// `tsc --strict` and run (client/typescript). Node and npm are skipped when
// missing, except under CI=true (.ci/test installs them).
func TestIntegrators(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	base, key, company := startDemo(t)

	t.Run("GoClient", func(t *testing.T) {
		goClientAgainst(t, base, key, company)
	})
	t.Run("TypeScript", func(t *testing.T) {
		dir := typescriptProject(t)
		run := func(name string, args ...string) string {
			t.Helper()
			cmd := exec.Command(filepath.Join(dir, "node_modules", ".bin", name), args...)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "BASE_URL="+base, "API_KEY="+key, "COMPANY_ID="+company)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
			}
			return string(out)
		}
		// The README's recipe, beside the full program.
		if err := os.WriteFile(filepath.Join(dir, "readme.ts"), readmeSnippet(t, "ts"), 0o644); err != nil {
			t.Fatal(err)
		}
		run("openapi-typescript", base+"/api/openapi.yaml", "-o", "schema.ts")
		run("tsc", "--strict", "--noEmit", "-p", "tsconfig.json") // zero errors, or it fails
		if out := run("tsx", "integrator.ts"); !strings.HasPrefix(out, "ok: ") {
			t.Fatalf("integrator.ts: %s", out)
		}
		if out := run("tsx", "readme.ts"); !regexp.MustCompile(`^[0-9]+ \[`).MatchString(out) {
			t.Fatalf("the README's snippet printed %q", out)
		}
	})
}

// goClientAgainst drives the five operations through the Go client.
func goClientAgainst(t *testing.T, base, key, company string) {
	ctx := context.Background()
	a, err := client.New(client.Config{BaseURL: base, APIKey: key, CompanyID: company})
	if err != nil {
		t.Fatal(err)
	}
	page, err := a.ListInvoices(ctx, client.ListInvoicesParams{})
	if err != nil {
		t.Fatal(err)
	}
	exact := regexp.MustCompile(`^[0-9]+\.[0-9]{2}$`)
	n := 0
	for inv, err := range a.Invoices(ctx, client.ListInvoicesParams{}) {
		if err != nil {
			t.Fatal(err)
		}
		n++
		if !exact.MatchString(inv.TotalAmount.String()) {
			t.Errorf("%s: totalAmount %s", inv.Number, inv.TotalAmount)
		}
	}
	if n != page.Total || n == 0 {
		t.Fatalf("walked %d invoices of %d", n, page.Total)
	}
	inv, err := a.GetInvoice(ctx, page.Data[0].Id)
	if err != nil || inv.Transmission.Status == "" {
		t.Fatalf("get invoice: %v %v", inv, err)
	}
	c, err := a.CreateClient(ctx, client.ClientInput{Name: "Integrador Go Lda"})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := a.GetClient(ctx, c.Id); err != nil || got.Name != c.Name {
		t.Fatalf("get client: %v %v", got, err)
	}
	if cp, err := a.ListClients(ctx, client.ListClientsParams{Search: &c.Name}); err != nil || cp.Total != 1 {
		t.Fatalf("search: %v %v", cp, err)
	}
	var p *client.Problem
	if _, err := a.GetClient(ctx, uuid.New()); !errors.As(err, &p) || p.Code != client.ProblemCodeNotFound {
		t.Fatalf("unknown client: %v", err)
	}
}

// readmeSnippet is the first code block of language lang in the README's
// Clients section.
func readmeSnippet(t *testing.T, lang string) []byte {
	t.Helper()
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)## Clients.*?```" + lang + "\n(.*?)```").FindSubmatch(readme)
	if m == nil {
		t.Fatalf("no %s block in the README's Clients section", lang)
	}
	return m[1]
}

// typescriptProject installs client/typescript's pinned npm packages once
// under the user's cache (keyed by package.json) and returns a fresh
// directory with the project's files and those node_modules.
func typescriptProject(t *testing.T) string {
	t.Helper()
	npm := tool(t, "npm")
	tool(t, "node")
	src := filepath.Join("..", "..", "client", "typescript")
	pkg, err := os.ReadFile(filepath.Join(src, "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(pkg)
	deps := filepath.Join(cache, "gateway-npm", "integrator-"+hex.EncodeToString(sum[:6]))
	if _, err := os.Stat(filepath.Join(deps, "node_modules", ".bin", "tsx")); err != nil {
		if err := os.MkdirAll(deps, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(deps, "package.json"), pkg, 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(npm, "install", "--prefix", deps, "--no-audit", "--no-fund", "--loglevel=error").CombinedOutput()
		if err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("npm install (client/typescript): %v\n%s", err, out)
			}
			t.Skipf("npm install failed (offline?): %v", err)
		}
	}
	dir := t.TempDir()
	for _, f := range []string{"package.json", "tsconfig.json", "integrator.ts"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(deps, "node_modules"), filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(fmt.Errorf("link node_modules: %w", err))
	}
	return dir
}
