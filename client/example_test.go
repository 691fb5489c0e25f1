package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/invoicing-ao/gateway/client"
)

// Example is docs/integrators.md's Go snippet, word for word (TestDocsShowExample):
// compiled here, and its calls run against a gateway in TestOperations.
func Example() {
	ctx := context.Background()
	api, err := client.New(client.Config{BaseURL: "https://api.invoicing.ao",
		APIKey: os.Getenv("INVOICING_API_KEY"), CompanyID: os.Getenv("INVOICING_COMPANY_ID")})
	if err != nil {
		log.Fatal(err)
	}
	for inv, err := range api.Invoices(ctx, client.ListInvoicesParams{Status: new(client.OVERDUE)}) {
		if err != nil {
			log.Fatal(err) // a *client.Problem (errors.As), or the network's error
		}
		fmt.Println(inv.Number, inv.TotalAmount) // json.Number: the exact decimal
	}
	_, err = api.CreateClient(ctx, client.ClientInput{Name: "Kianda Comércio Lda", Nif: new("5417000001")})
	var p *client.Problem
	if errors.As(err, &p) && p.Code == client.ProblemCodeNifConflict && p.ExistingClientId != nil {
		fmt.Println("already a client:", *p.ExistingClientId) // the company's client with that NIF
	}
}

func TestDocsShowExample(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../docs/integrators.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	shown := regexp.MustCompile("(?s)## Clients.*?```go\n(.*?)```").FindSubmatch(doc)
	body := regexp.MustCompile("(?s)func Example\\(\\) \\{\n\tctx := context.Background\\(\\)\n(.*?)\n\\}\n").FindSubmatch(src)
	if shown == nil || body == nil {
		t.Fatal("no Go snippet in docs/integrators.md's Clients section, or no Example")
	}
	if want := strings.ReplaceAll(string(body[1]), "\n\t", "\n")[1:] + "\n"; string(shown[1]) != want {
		t.Errorf("docs/integrators.md's Go snippet differs from Example:\n%s\nwant\n%s", shown[1], want)
	}
}

// docs/integrators.md's npm commands install the versions the TypeScript
// program is tested with (client/typescript/package.json).
func TestDocsPinTheTypeScriptTools(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../docs/integrators.md")
	if err != nil {
		t.Fatal(err)
	}
	pkg, err := os.ReadFile("typescript/package.json")
	if err != nil {
		t.Fatal(err)
	}
	var p struct{ Dependencies, DevDependencies map[string]string }
	if err := json.Unmarshal(pkg, &p); err != nil {
		t.Fatal(err)
	}
	section := regexp.MustCompile(`(?s)## Clients(.*?)\n## `).FindSubmatch(doc)
	if section == nil {
		t.Fatal("no Clients section in docs/integrators.md")
	}
	installs := regexp.MustCompile(`(?m)^    npm install.*$`).FindAll(section[1], -1)
	pins := regexp.MustCompile(`(@?[a-z][a-z0-9/-]*)@([0-9][^\s]*)`)
	n := 0
	for _, line := range installs {
		for _, m := range pins.FindAllSubmatch(line, -1) {
			name, version := string(m[1]), string(m[2])
			if want := p.Dependencies[name] + p.DevDependencies[name]; want != version {
				t.Errorf("docs/integrators.md installs %s@%s, package.json pins %q", name, version, want)
			}
			n++
		}
	}
	if n < 3 {
		t.Errorf("%d pinned packages in docs/integrators.md's npm install lines", n)
	}
}
