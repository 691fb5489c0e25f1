// Conformance: reading clients, one by id, a page and a search.
// runConformance (conformance_test.go) runs these on each database.

package backend_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/invoicing-ao/gateway/backend"
	"github.com/invoicing-ao/gateway/invoicing"
)

func testGetClient(t *testing.T, s *backend.Store) {
	ctx := context.Background()
	c, err := s.GetClient(ctx, coA, cliCompany)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":"11000000-0000-4000-8000-000000000001","name":"Sonangol Distribuição SA","nif":"5417001234",` +
		`"email":"geral@sonangol.example","phone":"+244923456789","address":"Rua Rainha Ginga 29, Luanda",` +
		`"type":"COMPANY","createdAt":"2026-01-05T10:00:00.120Z","updatedAt":"2026-01-05T10:00:00.120Z"}`
	if got := jsonOf(t, c); got != want {
		t.Fatalf("client JSON\n got %s\nwant %s", got, want)
	}
	// Each mapping rule: phone forms, kind, NIF as stored, createdAt format.
	cases := []struct {
		id, phone, typ, nif, created string
	}{
		{cliIndiv, `"+244923456780"`, `"INDIVIDUAL"`, `"000238553ca017"`, `"2026-01-06T08:30:15.500Z"`},
		{cliNullKind, `"+244923456781"`, `null`, `null`, `"2026-01-07T00:00:00.000Z"`},
		{cliSpaced, `"+244923456782"`, `"COMPANY"`, `"541 700 9999"`, `"2026-01-08T00:00:00.000Z"`},
		{cliForeign, `"+351912345678"`, `"COMPANY"`, `"PT123456"`, `"2026-01-09T00:00:00.000Z"`},
		{cliOdd, `"12345"`, `"INDIVIDUAL"`, `null`, `"2026-01-10T00:00:00.000Z"`},
		{cliTieLow, `null`, `null`, `null`, `"2026-01-11T00:00:00.000Z"`},
	}
	for _, tc := range cases {
		c, err := s.GetClient(ctx, coA, tc.id)
		if err != nil {
			t.Fatalf("GetClient(%s): %v", tc.id, err)
		}
		got := []string{jsonOf(t, c.Phone), jsonOf(t, c.Type), jsonOf(t, c.NIF), jsonOf(t, c.CreatedAt)}
		want := []string{tc.phone, tc.typ, tc.nif, tc.created}
		if !slices.Equal(got, want) {
			t.Errorf("GetClient(%s) phone/type/nif/createdAt = %v, want %v", tc.id, got, want)
		}
	}
	for _, id := range []string{cliDeleted, cliB, "11000000-0000-4000-8000-0000000000ff", "nope", cliCompany + "x"} {
		if _, err := s.GetClient(ctx, coA, id); !errors.Is(err, backend.ErrNotFound) {
			t.Errorf("GetClient(A, %s): %v, want ErrNotFound", id, err)
		}
	}
}

func clientIDs(p invoicing.Page[invoicing.Client]) []string {
	ids := make([]string, len(p.Data))
	for i, c := range p.Data {
		ids[i] = c.ID
	}
	return ids
}

func testListClients(t *testing.T, s *backend.Store) {
	p, err := s.ListClients(context.Background(), coA, invoicing.ClientFilter{Page: 1, PageSize: 20})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{cliTieHigh, cliTieLow, cliOdd, cliForeign, cliSpaced, cliNullKind, cliIndiv, cliCompany}
	if got := clientIDs(p); !slices.Equal(got, want) || p.Total != 8 || p.Page != 1 || p.PageSize != 20 {
		t.Fatalf("clients = %v total %d, want %v total 8", got, p.Total, want)
	}
	// The list maps exactly as get does.
	one, _ := s.GetClient(context.Background(), coA, cliCompany)
	if jsonOf(t, p.Data[7]) != jsonOf(t, one) {
		t.Fatalf("list entry %s != get %s", jsonOf(t, p.Data[7]), jsonOf(t, one))
	}
}

func testClientSearch(t *testing.T, s *backend.Store) {
	cases := []struct {
		search string
		want   []string
	}{
		{"sonangol", []string{cliCompany}},
		{"SONANGOL DISTRIBUIÇÃO", []string{cliCompany}},
		{"joão", []string{cliIndiv}},
		{"évora", []string{cliForeign}}, // non-ASCII upper case stored
		{"JOÃO", []string{cliIndiv}},
		{"000238553CA017", []string{cliIndiv}},      // stored lower case
		{"000 238 553 ca", []string{cliIndiv}},      // spaces and case ignored
		{"5417009999", []string{cliSpaced}},         // stored with spaces
		{"541700", []string{cliSpaced, cliCompany}}, // substring of both; deleted 5417005555 hidden
		{"%", []string{cliNullKind}},                // wildcards are literal
		{"_", []string{cliNullKind}},
		{`\`, nil},
		{"100% s", []string{cliNullKind}},
		{"apagado", nil}, // deleted customer
		{"'; DROP TABLE customers; --", nil},
		{"tie", []string{cliTieHigh, cliTieLow}},
	}
	for _, tc := range cases {
		p, err := s.ListClients(context.Background(), coA, invoicing.ClientFilter{Search: tc.search, Page: 1, PageSize: 100})
		if err != nil {
			t.Fatalf("search %q: %v", tc.search, err)
		}
		if got := clientIDs(p); !slices.Equal(got, tc.want) || p.Total != int64(len(tc.want)) {
			t.Errorf("search %q = %v (total %d), want %v", tc.search, got, p.Total, tc.want)
		}
	}
	// Page by page, by number and by cursor, a search gives its matches in
	// the list's order, each once.
	for _, search := range []string{"541700", "tie", "a"} {
		all, err := s.ListClients(context.Background(), coA, invoicing.ClientFilter{Search: search, Page: 1, PageSize: 100})
		if err != nil {
			t.Fatal(err)
		}
		want := clientIDs(all)
		var byPage, byCursor []string
		var after *invoicing.Position
		for page := 1; page <= len(want)+1; page++ {
			p, err := s.ListClients(context.Background(), coA, invoicing.ClientFilter{Search: search, Page: page, PageSize: 1})
			if err != nil || p.Total != int64(len(want)) {
				t.Fatalf("search %q page %d: total %d, %v; want %d", search, page, p.Total, err, len(want))
			}
			byPage = append(byPage, clientIDs(p)...)
			c, err := s.ListClients(context.Background(), coA, invoicing.ClientFilter{Search: search, Page: 1, PageSize: 1, After: after})
			if err != nil {
				t.Fatalf("search %q after %v: %v", search, after, err)
			}
			byCursor = append(byCursor, clientIDs(c)...)
			if after = c.Next; after == nil {
				break
			}
		}
		if len(want) < 2 || !slices.Equal(byPage, want) || !slices.Equal(byCursor, want) {
			t.Errorf("search %q by pages of 1: %v by number, %v by cursor; want %v (two or more)", search, byPage, byCursor, want)
		}
		past, err := s.ListClients(context.Background(), coA, invoicing.ClientFilter{Search: search, Page: len(want) + 1, PageSize: 1})
		if err != nil || len(past.Data) != 0 || past.Total != int64(len(want)) || past.Next != nil {
			t.Errorf("search %q, the page past the end: %+v, %v", search, past, err)
		}
	}
	// The table survived the injection attempt.
	if _, err := s.GetClient(context.Background(), coA, cliCompany); err != nil {
		t.Fatal(err)
	}
}
