// Conformance: creating clients, with and without an id given, and two
// creations racing.
// runConformance (conformance_test.go) runs these on each database.

package backend_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/invoicing-ao/gateway/backend"
	g "github.com/invoicing-ao/gateway/backend/gendata"
	"github.com/invoicing-ao/gateway/invoicing"
)

func testCreateClient(t *testing.T, s *backend.Store) {
	ctx := context.Background()
	c, err := s.CreateClient(ctx, coW, invoicing.NewClient{
		Name: "Nova Empresa", NIF: g.Ptr(" 5417 00 77ab "), Email: g.Ptr("a@b.example"),
		Phone: g.Ptr("923 456 789"), Address: g.Ptr("Av. 4 de Fevereiro"), Type: g.Ptr("COMPANY"),
	})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":"` + c.ID + `","name":"Nova Empresa","nif":"54170077AB","email":"a@b.example",` +
		`"phone":"+244923456789","address":"Av. 4 de Fevereiro","type":"COMPANY","createdAt":"2026-03-10T12:00:00.000Z",` +
		`"updatedAt":"2026-03-10T12:00:00.000Z"}`
	if got := jsonOf(t, c); got != want {
		t.Fatalf("created\n got %s\nwant %s", got, want)
	}
	got, err := s.GetClient(ctx, coW, c.ID)
	if err != nil || jsonOf(t, got) != jsonOf(t, c) {
		t.Fatalf("get after create: %s, %v; want %s", jsonOf(t, got), err, jsonOf(t, c))
	}

	minimal, err := s.CreateClient(ctx, coW, invoicing.NewClient{Name: "Só Nome"})
	if err != nil || minimal.NIF != nil || minimal.Type != nil || minimal.Phone != nil {
		t.Fatalf("minimal create: %s, %v", jsonOf(t, minimal), err)
	}
	if _, err := s.CreateClient(ctx, coW, invoicing.NewClient{Name: "Outro Sem NIF"}); err != nil {
		t.Fatalf("two clients without NIF: %v", err)
	}
	indiv, err := s.CreateClient(ctx, coW, invoicing.NewClient{Name: "Pessoa", Type: g.Ptr("INDIVIDUAL"), Phone: g.Ptr("+351 912")})
	if err != nil || jsonOf(t, indiv.Type) != `"INDIVIDUAL"` || *indiv.Phone != "+351 912" {
		t.Fatalf("individual: %s, %v", jsonOf(t, indiv), err)
	}

	// A conflict names the company's client that has the NIF.
	conflicts := []struct {
		name, nif string
		want      error
		holder    string
	}{
		{"same NIF again", "54170077ab", backend.ErrNIFConflict, c.ID},
		{"same NIF, spaces and case", "5417 0077 AB", backend.ErrNIFConflict, c.ID},
		{"existing NIF typed with spaces", "5999000001", backend.ErrNIFConflict, cliWTyped},
		{"deleted customer's NIF is free", "5999000002", nil, ""},
		{"another company's NIF is fine", "5417001234", nil, ""},
	}
	for _, tc := range conflicts {
		_, err := s.CreateClient(ctx, coW, invoicing.NewClient{Name: tc.name, NIF: g.Ptr(tc.nif)})
		if !errors.Is(err, tc.want) && !(tc.want == nil && err == nil) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
		var taken *backend.NIFConflictError
		if tc.holder != "" && (!errors.As(err, &taken) || taken.ClientID != tc.holder) {
			t.Errorf("%s: %v, want a NIFConflictError naming %s", tc.name, err, tc.holder)
		}
	}
	// Now both this company and another have 5417001234: the conflict names
	// this company's client, never the other's (cliCompany, of coA).
	p, err := s.ListClients(ctx, coW, invoicing.ClientFilter{Search: "5417001234", Page: 1, PageSize: 10})
	if err != nil || len(p.Data) != 1 {
		t.Fatalf("coW's client with 5417001234: %v, %v", p.Data, err)
	}
	_, err = s.CreateClient(ctx, coW, invoicing.NewClient{Name: "Again", NIF: g.Ptr("5417001234")})
	if taken := (*backend.NIFConflictError)(nil); !errors.As(err, &taken) || taken.ClientID != p.Data[0].ID {
		t.Errorf("a NIF two companies have: %v, want a NIFConflictError naming %s (not %s)", err, p.Data[0].ID, cliCompany)
	}
	invalid := []struct {
		co   string
		c    invoicing.NewClient
		want error
	}{
		{coW, invoicing.NewClient{Name: ""}, backend.ErrInvalid},
		{coW, invoicing.NewClient{Name: "X", Type: g.Ptr("PERSON")}, backend.ErrInvalid},
		{"f0000000-0000-4000-8000-000000000000", invoicing.NewClient{Name: "X"}, backend.ErrNotFound},
		{"not-a-uuid", invoicing.NewClient{Name: "X"}, backend.ErrNotFound},
	}
	for _, tc := range invalid {
		if _, err := s.CreateClient(ctx, tc.co, tc.c); !errors.Is(err, tc.want) {
			t.Errorf("create %+v in %s: %v, want %v", tc.c, tc.co, err, tc.want)
		}
	}
}

func testCreateRace(t *testing.T, s *backend.Store) {
	const n = 20
	var wg sync.WaitGroup
	errs := make([]error, n)
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, errs[i] = s.CreateClient(context.Background(), coW, invoicing.NewClient{Name: "Corrida", NIF: g.Ptr("5888000000")})
		}()
	}
	close(start)
	wg.Wait()
	ok, conflict := 0, 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case errors.Is(err, backend.ErrNIFConflict):
			conflict++
		default:
			t.Errorf("unexpected error: %v", err)
		}
	}
	if ok != 1 || conflict != n-1 {
		t.Fatalf("%d created, %d conflicts; want 1 and %d", ok, conflict, n-1)
	}
	p, err := s.ListClients(context.Background(), coW, invoicing.ClientFilter{Search: "5888000000", Page: 1, PageSize: 100})
	if err != nil || p.Total != 1 {
		t.Fatalf("rows with the raced NIF: %d, %v", p.Total, err)
	}
}

// testCreateWithID: a create given an id makes the row once; every further
// create with that id (with or without a NIF, concurrent or not) meets it
// as a ClientExistsError holding the client, and never makes a second row.
func testCreateWithID(t *testing.T, s *backend.Store) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		nif  *string
	}{{"with NIF", g.Ptr("5999888777")}, {"without NIF", nil}} {
		t.Run(tc.name, func(t *testing.T) {
			id := uuidFor(tc.name)
			nc := invoicing.NewClient{ID: id, Name: "Idempotente " + tc.name, NIF: tc.nif}
			const n = 10
			var wg sync.WaitGroup
			results := make([]invoicing.Client, n)
			errs := make([]error, n)
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					results[i], errs[i] = s.CreateClient(ctx, coW, nc)
				}()
			}
			wg.Wait()
			created, existing := 0, 0
			for i, err := range errs {
				var ex *backend.ClientExistsError
				switch {
				case err == nil:
					created++
					if results[i].ID != id {
						t.Errorf("created id %s, want %s", results[i].ID, id)
					}
				case errors.As(err, &ex) && errors.Is(err, backend.ErrClientExists):
					existing++
					if ex.Client.ID != id || ex.Client.Name != nc.Name {
						t.Errorf("existing client %+v, want id %s", ex.Client, id)
					}
				default:
					t.Errorf("unexpected error: %v", err)
				}
			}
			if created != 1 || existing != n-1 {
				t.Fatalf("%d created, %d met the existing row; want 1 and %d", created, existing, n-1)
			}
			got, err := s.GetClient(ctx, coW, id)
			if err != nil || got.Name != nc.Name {
				t.Fatalf("GetClient(%s) = %+v, %v", id, got, err)
			}
			p, err := s.ListClients(ctx, coW, invoicing.ClientFilter{Search: nc.Name, Page: 1, PageSize: 100})
			if err != nil || p.Total != 1 {
				t.Fatalf("rows named %q: %d, %v; want exactly 1", nc.Name, p.Total, err)
			}
		})
	}
	// Another company's create with the same id is not this client: the
	// gateway derives ids per company, so the id is refused, never shared.
	if _, err := s.CreateClient(ctx, coA, invoicing.NewClient{ID: uuidFor("with NIF"), Name: "Outra"}); err == nil || errors.Is(err, backend.ErrClientExists) {
		t.Errorf("another company's create with a taken id: %v, want a plain error", err)
	}
	if _, err := s.CreateClient(ctx, coW, invoicing.NewClient{ID: "NOT-AN-ID", Name: "X"}); !errors.Is(err, backend.ErrInvalid) {
		t.Errorf("malformed id: %v, want ErrInvalid", err)
	}
}

// uuidFor is a fixed UUID per test case name.
func uuidFor(name string) string {
	h := sha256.Sum256([]byte(name))
	h[6] = h[6]&0x0f | 0x40
	h[8] = h[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
}
