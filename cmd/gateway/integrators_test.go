package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/invoicing-ao/gateway/backend/gendata"
	"github.com/invoicing-ao/gateway/client"
)

// The integrator's view, against the demo as `gateway demo` runs it: the Go
// client of this repository (client/), and a TypeScript program whose types
// openapi-typescript generates from the served document, type-checked with
// `tsc --strict` and run (client/typescript), with its webhook receiver sent
// deliveries signed as the gateway signs them. Node and npm are skipped when
// missing, except under CI=true (.ci/test installs them).
func TestIntegrators(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short")
	}
	printed := runDemo(t)
	base, key, company := parseDemo(t, printed)

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
		run("openapi-typescript", base+"/api/openapi.yaml", "-o", "schema.ts")
		run("tsc", "--strict", "--noEmit", "-p", "tsconfig.json") // zero errors, or it fails
		if out := run("tsx", "integrator.ts"); !strings.HasPrefix(out, "ok: ") {
			t.Fatalf("integrator.ts: %s", out)
		}
		typescriptReceiver(t, dir, base, key, company)
		typescriptReceiverFromGateway(t, dir, printed)
	})
	t.Run("TypeScriptAsDocumented", func(t *testing.T) {
		typescriptAsDocumented(t, base, key, company)
	})
}

// typescriptReceiver runs receiver.ts and checks the events it typed: each
// accepted event printed once, with its data read through the generated
// types (an invoice's number, status, amount and transmission).
func typescriptReceiver(t *testing.T, dir, base, key, company string) {
	secret := webhookSecret(t)
	port := freePort(t)
	cmd := exec.Command(filepath.Join(dir, "node_modules", ".bin", "tsx"), "receiver.ts")
	cmd.Dir, cmd.Env = dir, append(os.Environ(), "WEBHOOK_SECRET="+secret)
	out := startReceiver(t, cmd, port)
	invJSON, clJSON := demoInvoiceAndClient(t, base, key, company)
	var inv struct {
		ID, Number, Status string
		TotalAmount        json.Number
		Transmission       struct{ Status string }
	}
	var cl struct{ ID, Name string }
	if json.Unmarshal(invJSON, &inv) != nil || json.Unmarshal(clJSON, &cl) != nil {
		t.Fatalf("the demo's invoice or client: %s %s", invJSON, clJSON)
	}
	got := deliverToReceiver(t, port, out, secret, invJSON, clJSON)
	// Whose each event is, read through the generated types as well.
	want := []string{
		fmt.Sprintf("invoice.paid LIVE %s %s %s %s %s %s", gendata.DemoCompanyA, inv.ID, inv.Number, inv.Status, inv.TotalAmount, inv.Transmission.Status),
		fmt.Sprintf("client.updated LIVE %s %s %s", gendata.DemoCompanyA, cl.ID, cl.Name),
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("receiver.ts printed\n%s\nwant\n%s\n(all output:\n%s)", strings.Join(got, "\n"), strings.Join(want, "\n"), out.String())
	}
}

// typescriptReceiverFromGateway registers receiver.ts as a webhook
// endpoint of the demo's company A (through the admin API, as the
// platform's dashboard would), creates a client through the public API, and
// checks that the gateway's own delivery of client.created verifies with
// npm standardwebhooks and is printed once.
func typescriptReceiverFromGateway(t *testing.T, dir, printed string) {
	base, key, company := parseDemo(t, printed)
	m := regexp.MustCompile(`admin API on (\S+), token (\w+)\)`).FindStringSubmatch(printed)
	if m == nil {
		t.Fatalf("no admin address and token in:\n%s", printed)
	}
	port := freePort(t)
	body := fmt.Sprintf(`{"mode":"LIVE","url":"http://127.0.0.1:%d/webhooks/invoicing","types":["client.created"]}`, port)
	req, _ := http.NewRequest(http.MethodPost, "http://"+m[1]+"/admin/v1/companies/"+company+"/webhooks", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+m[2])
	req.Header.Set("X-Actor", "integrators-test")
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var ep struct{ Secret string }
	err = json.NewDecoder(res.Body).Decode(&ep)
	res.Body.Close()
	if err != nil || res.StatusCode != http.StatusCreated || ep.Secret == "" {
		t.Fatalf("create the endpoint: %d %v", res.StatusCode, err)
	}
	cmd := exec.Command(filepath.Join(dir, "node_modules", ".bin", "tsx"), "receiver.ts")
	cmd.Dir, cmd.Env = dir, append(os.Environ(), "WEBHOOK_SECRET="+ep.Secret)
	out := startReceiver(t, cmd, port)
	req, _ = http.NewRequest(http.MethodPost, base+"/api/v1/v1/clients", strings.NewReader(`{"name":"Integrador TS Lda"}`))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("X-Company-Id", company)
	req.Header.Set("Content-Type", "application/json")
	res, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var cl struct{ ID string }
	err = json.NewDecoder(res.Body).Decode(&cl)
	res.Body.Close()
	if err != nil || res.StatusCode != http.StatusCreated {
		t.Fatalf("create a client: %d %v", res.StatusCode, err)
	}
	want := "client.created LIVE " + company + " " + cl.ID + " Integrador TS Lda"
	waitPrinted(t, out, regexp.MustCompile(regexp.QuoteMeta(want)), "receiver.ts's line of the gateway's delivery")
	if n := strings.Count(out.String(), want); n != 1 {
		t.Errorf("receiver.ts printed the event %d times:\n%s", n, out.String())
	}
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
	deps := npmCached(t, filepath.Join(cache, "gateway-npm", "integrator-"+hex.EncodeToString(sum[:6])), func(into string) ([]byte, error) {
		if err := os.WriteFile(filepath.Join(into, "package.json"), pkg, 0o644); err != nil {
			return nil, err
		}
		return exec.Command(npm, "install", "--prefix", into, "--no-audit", "--no-fund", "--loglevel=error").CombinedOutput()
	})
	return npmCopy(t, src, deps, "package.json", "tsconfig.json", "integrator.ts", "webhook.ts", "receiver.ts")
}

// npmCopy is a new directory with files copied from src and the
// node_modules of deps (linked: installed once, shared by every run).
func npmCopy(t *testing.T, src, deps string, files ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range files {
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
