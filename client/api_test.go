package client_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"testing"

	"github.com/google/uuid"

	"github.com/invoicing-ao/gateway/client"
)

func ptr[T any](v T) *T { return &v }

var (
	money     = regexp.MustCompile(`^-?[0-9]+\.[0-9]{2}$`)
	unitPrice = regexp.MustCompile(`^-?[0-9]+\.[0-9]{2,4}$`)
)

// The five operations through the client against a real gateway: typed
// results, every page of a list, errors as *Problem.
func TestOperations(t *testing.T) {
	t.Parallel()
	g := startGateway(t)
	a := g.api(t, client.Config{})

	checkInvoiceOperations(t, a)
	checkClientWalk(t, a)
	in, created := checkCreateClient(t, a)
	checkProblems(t, g, a, in, created)
}

// checkInvoiceOperations lists, walks and gets invoices: every invoice once
// in the API's order, money exact, the status filter kept, a walk stopped
// early.
func checkInvoiceOperations(t *testing.T, a *client.API) {
	t.Helper()
	ctx := context.Background()
	first, err := a.ListInvoices(ctx, client.ListInvoicesParams{PageSize: ptr(5)})
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Data) != 5 || first.Total <= 5 || first.Page != 1 || first.PageSize != 5 {
		t.Fatalf("first page: %d items, total %d, page %d, size %d", len(first.Data), first.Total, first.Page, first.PageSize)
	}
	// Every invoice, 7 at a time, in the API's order, each once, money exact.
	var all []client.Invoice
	seen := map[client.Id]bool{}
	for inv, err := range a.Invoices(ctx, client.ListInvoicesParams{PageSize: ptr(7)}) {
		if err != nil {
			t.Fatal(err)
		}
		if seen[inv.Id] {
			t.Fatalf("invoice %s yielded twice", inv.Id)
		}
		seen[inv.Id] = true
		all = append(all, inv)
		if !money.MatchString(string(inv.TotalAmount)) {
			t.Errorf("%s: totalAmount %s is not the wire's exact 2-decimal form", inv.Number, inv.TotalAmount)
		}
		for _, it := range inv.Items {
			if !unitPrice.MatchString(string(it.UnitPrice)) || !money.MatchString(string(it.Total)) {
				t.Errorf("%s: item %s × %s = %s", inv.Number, it.Quantity, it.UnitPrice, it.Total)
			}
		}
	}
	if len(all) != first.Total || all[0].Id != first.Data[0].Id || all[4].Id != first.Data[4].Id {
		t.Fatalf("walked %d invoices, total %d; first %v", len(all), first.Total, all[0].Id)
	}
	overdue := 0
	for inv, err := range a.Invoices(ctx, client.ListInvoicesParams{Status: ptr(client.OVERDUE)}) {
		if err != nil {
			t.Fatal(err)
		}
		overdue++
		if inv.Status != client.OVERDUE || (inv.Type != client.FT && inv.Type != client.ND) {
			t.Errorf("OVERDUE filter: %s %s is %s", inv.Type, inv.Number, inv.Status)
		}
	}
	if overdue == 0 {
		t.Error("no OVERDUE invoice in the demo data")
	}
	// Stopping early stops the walk.
	n := 0
	for range a.Invoices(ctx, client.ListInvoicesParams{PageSize: ptr(2)}) {
		if n++; n == 3 {
			break
		}
	}

	inv, err := a.GetInvoice(ctx, all[0].Id)
	if err != nil {
		t.Fatal(err)
	}
	if inv.Id != all[0].Id || inv.Number != all[0].Number || inv.Transmission.Status == "" {
		t.Fatalf("get invoice: %+v", inv)
	}
}

// checkClientWalk walks the clients by cursor, 3 a page, while a client is
// created: each client of the start once, the new one (newest first: before
// the walk's position) not at all.
func checkClientWalk(t *testing.T, a *client.API) {
	t.Helper()
	ctx := context.Background()
	cp, err := a.ListClients(ctx, client.ListClientsParams{PageSize: ptr(1)})
	if err != nil {
		t.Fatal(err)
	}
	walked := map[client.Id]bool{}
	for c, err := range a.Clients(ctx, client.ListClientsParams{PageSize: ptr(3)}) {
		if err != nil {
			t.Fatal(err)
		}
		if walked[c.Id] {
			t.Fatalf("client %s yielded twice", c.Id)
		}
		if len(walked) == 1 {
			if _, err := a.CreateClient(ctx, client.ClientInput{Name: "Criado durante a leitura"}); err != nil {
				t.Fatal(err)
			}
		}
		walked[c.Id] = true
	}
	if len(walked) != cp.Total {
		t.Fatalf("walked %d clients, %d when the walk began", len(walked), cp.Total)
	}
}

// checkCreateClient creates a client with a NIF and gets it back. It
// returns the input and the client created.
func checkCreateClient(t *testing.T, a *client.API) (client.ClientInput, *client.ClientRecord) {
	t.Helper()
	ctx := context.Background()
	in := client.ClientInput{Name: "Kianda Comércio Lda", Nif: ptr("541 700 9999"), Phone: ptr("+244 923 456 789"), Type: ptr(client.COMPANY)}
	created, err := a.CreateClient(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if *created.Nif != "5417009999" || *created.Phone != "+244923456789" || *created.Type != client.COMPANY || created.Email != nil {
		t.Fatalf("created: %+v", created)
	}
	got, err := a.GetClient(ctx, created.Id)
	if err != nil || got.Name != created.Name || !got.CreatedAt.Equal(created.CreatedAt) {
		t.Fatalf("get client: %+v, %v", got, err)
	}
	return in, created
}

// checkProblems checks that errors are *Problem, through any wrapping, with
// the document's codes; in is the input that created created.
func checkProblems(t *testing.T, g *testGateway, a *client.API, in client.ClientInput, created *client.ClientRecord) {
	t.Helper()
	ctx := context.Background()
	_, err := a.CreateClient(ctx, in)
	if p := expectProblem(t, fmt.Errorf("saving: %w", err), 409, client.ProblemCodeNifConflict); p.ExistingClientId == nil || *p.ExistingClientId != created.Id {
		t.Errorf("nif_conflict names %v, want the client made first, %v", p.ExistingClientId, created.Id)
	}
	_, err = a.CreateClient(ctx, client.ClientInput{Name: "x", Nif: ptr("12")})
	if p := expectProblem(t, err, 400, client.ProblemCodeInvalidBody); p.Errors == nil || (*p.Errors)[0].Field != "nif" {
		t.Errorf("invalid body: errors %v", p.Errors)
	}
	_, err = a.GetInvoice(ctx, uuid.New())
	expectProblem(t, err, 404, client.ProblemCodeNotFound)
	_, err = a.ListInvoices(ctx, client.ListInvoicesParams{PageSize: ptr(101)})
	expectProblem(t, err, 400, client.ProblemCodeInvalidParameter)
	for _, err := range a.Clients(ctx, client.ListClientsParams{Page: ptr(0)}) {
		expectProblem(t, err, 400, client.ProblemCodeInvalidParameter)
	}

	bad, err := client.New(client.Config{BaseURL: g.URL, APIKey: "igw_live_" + fmt.Sprintf("%043d", 0), CompanyID: created.Id.String()})
	if err != nil {
		t.Fatal(err)
	}
	_, err = bad.ListClients(ctx, client.ListClientsParams{})
	expectProblem(t, err, 401, client.ProblemCodeInvalidApiKey)
}

func expectProblem(t *testing.T, err error, status int, code client.ProblemCode) *client.Problem {
	t.Helper()
	var p *client.Problem
	if !errors.As(err, &p) {
		t.Fatalf("error %v (%T) is not a *client.Problem", err, err)
	}
	if p.Status != status || p.Code != code || p.RequestId == "" || p.Detail == "" {
		t.Fatalf("problem %+v, want %d %s", p, status, code)
	}
	return p
}

func TestNewChecksItsConfig(t *testing.T) {
	t.Parallel()
	for _, cfg := range []client.Config{
		{BaseURL: "", APIKey: "k", CompanyID: "c"},
		{BaseURL: "api.invoicing.ao", APIKey: "k", CompanyID: "c"},
		{BaseURL: "ftp://api.invoicing.ao", APIKey: "k", CompanyID: "c"},
		{BaseURL: "https://api.invoicing.ao", CompanyID: "c"},
		{BaseURL: "https://api.invoicing.ao", APIKey: "k"},
	} {
		if _, err := client.New(cfg); err == nil {
			t.Errorf("New(%+v) accepted", cfg)
		}
	}
}
