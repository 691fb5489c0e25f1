package gateway_test

// Tenant isolation, end to end on PostgreSQL and Redis: two companies, a key
// of every mode and scope each; no request lets one company read, list,
// search or create anything of the other's, nor tell whether the other's ids
// exist; LIVE and TEST never see each other's rows.

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/backend"
	"github.com/invoicing-ao/gateway/invoicing"
)

// tenant is one company in one mode, and what its database holds for it.
type tenant struct {
	co       string
	mode     invoicing.Mode
	invoices map[string]bool
	clients  map[string]bool
	names    []string // client names and NIFs, as search terms
}

// isolationActor is a key and the tenant it belongs to.
type isolationActor struct {
	tenant *tenant
	scopes string
	key    string
}

func (a isolationActor) String() string {
	return a.tenant.co[len(a.tenant.co)-1:] + "/" + string(a.tenant.mode) + "/" + a.scopes
}

func (a isolationActor) can(scope string) bool { return a.scopes == allScopes || a.scopes == scope }

func loadTenant(t *testing.T, st *backend.Store, co string, mode invoicing.Mode) *tenant {
	t.Helper()
	ctx := context.Background()
	tn := &tenant{co: co, mode: mode, invoices: map[string]bool{}, clients: map[string]bool{}}
	for p := 1; ; p++ {
		inv, err := st.ListInvoices(ctx, co, invoicing.InvoiceFilter{Page: p, PageSize: 100})
		if err != nil {
			t.Fatal(err)
		}
		cl, err := st.ListClients(ctx, co, invoicing.ClientFilter{Page: p, PageSize: 100})
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range inv.Data {
			tn.invoices[x.ID] = true
		}
		for _, x := range cl.Data {
			tn.clients[x.ID] = true
			tn.names = append(tn.names, x.Name)
			if x.NIF != nil {
				tn.names = append(tn.names, *x.NIF)
			}
		}
		if len(inv.Data) < 100 && len(cl.Data) < 100 {
			break
		}
	}
	if len(tn.invoices) == 0 || len(tn.clients) == 0 {
		t.Fatalf("tenant %s %s has no data: the suite could not fail", co, mode)
	}
	return tn
}

func sample(m map[string]bool, n int) []string {
	out := make([]string, 0, len(m))
	for id := range m {
		out = append(out, id)
	}
	sort.Strings(out)
	return out[:min(n, len(out))]
}

// sameAnswer asserts that two answers cannot be told apart: status, body
// apart from the request id, and header names and content type.
func sameAnswer(t *testing.T, what string, got, want resp) {
	t.Helper()
	norm := func(r resp) string {
		if r.Status < 400 {
			return fmt.Sprintf("%d %s", r.Status, r.Body)
		}
		m := r.json(t)
		delete(m, "requestId")
		var names []string
		for k := range r.Header {
			names = append(names, k)
		}
		sort.Strings(names)
		return fmt.Sprintf("%d %v %v %s", r.Status, m, names, r.Header.Get("Content-Type"))
	}
	if g, w := norm(got), norm(want); g != w {
		t.Errorf("%s: answer differs from an unknown id's:\n got %s\nwant %s", what, g, w)
	}
}

// listAll pages through a list and returns every id.
func listAll(t *testing.T, base string, a isolationActor, path string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	for p := 1; ; p++ {
		pg := getPage(t, base, req{Path: fmt.Sprintf("%s%spageSize=100&page=%d", path, sep, p), Key: a.key, Company: a.tenant.co})
		for id := range ids(pg) {
			out[id] = true
		}
		if len(pg.Data) < 100 {
			return out
		}
	}
}

// isolationRun is one instance, its four tenants and a key of every mode
// and scope for each.
type isolationRun struct {
	in      *instance
	base    string
	tenants map[string]*tenant // by company and mode
	all     []*tenant
	actors  []isolationActor
}

func newIsolationRun(t *testing.T) *isolationRun {
	t.Helper()
	w := newWorld(t)
	r := &isolationRun{in: w.start(), tenants: map[string]*tenant{}}
	r.base = r.in.pub.URL
	for _, co := range []string{coA, coB} {
		for _, m := range []invoicing.Mode{invoicing.Live, invoicing.Test} {
			st := r.in.live
			if m == invoicing.Test {
				st = r.in.test
			}
			tn := loadTenant(t, st, co, m)
			r.tenants[co+string(m)] = tn
			r.all = append(r.all, tn)
		}
	}
	// Every mode and scope: 4 keys per company and mode, 8 per company.
	for _, tn := range r.all {
		for _, sc := range []string{allScopes, "invoices:read", "clients:read", "clients:write"} {
			r.actors = append(r.actors, isolationActor{tenant: tn, scopes: sc, key: r.in.key(t, tn.co, tn.mode, sc).Key})
		}
	}
	return r
}

// eachActor runs check for every actor, as parallel subtests, in parallel
// with its caller's siblings.
func (r *isolationRun) eachActor(t *testing.T, check func(t *testing.T, a isolationActor)) {
	t.Parallel()
	for _, a := range r.actors {
		t.Run(strings.ReplaceAll(a.String(), "/", " "), func(t *testing.T) {
			t.Parallel()
			check(t, a)
		})
	}
}

func TestTenantIsolation(t *testing.T) {
	t.Parallel()
	r := newIsolationRun(t)
	// The reads see the tenants' data as loaded: they run, in parallel,
	// before the creates add to it.
	t.Run("reads", func(t *testing.T) {
		t.Run("lists show exactly the tenant's own rows", func(t *testing.T) { r.eachActor(t, r.ownLists) })
		t.Run("foreign and malformed ids answer like unknown ids", func(t *testing.T) { r.eachActor(t, r.foreignIDs) })
		t.Run("search never finds another tenant's clients", func(t *testing.T) { r.eachActor(t, r.search) })
		t.Run("X-Company-Id of another company tells nothing about it", r.companyHeader)
	})
	t.Run("creates stay in the caller's company and mode", r.creates)
}

func (r *isolationRun) ownLists(t *testing.T, a isolationActor) {
	for kind, own := range map[string]map[string]bool{"invoices": a.tenant.invoices, "clients": a.tenant.clients} {
		if !a.can(kind + ":read") {
			continue
		}
		got := listAll(t, r.base, a, "/api/v1/v1/"+kind)
		if len(got) != len(own) {
			t.Errorf("%s lists %d %s, its database holds %d", a, len(got), kind, len(own))
		}
		for id := range got {
			if !own[id] {
				t.Errorf("%s listed %s %s that is not its own", a, kind, id)
			}
		}
	}
}

var nonUUIDs = []string{"x", "1", "null", "'%20OR%20'1'='1", "%00", "..", coA, coB, strings.Repeat("a", 300),
	"0a5e7c1e-0000-4000-8000-00000000000", "%7B" + coA + "%7D", "0a5e7c1e00004000800000000000000a"}

func (r *isolationRun) foreignIDs(t *testing.T, a isolationActor) {
	for _, kind := range []string{"invoices", "clients"} {
		if !a.can(kind + ":read") {
			continue
		}
		get := func(id string) resp {
			return do(t, r.base, req{Path: "/api/v1/v1/" + kind + "/" + id, Key: a.key, Company: a.tenant.co})
		}
		idSet := func(tn *tenant) map[string]bool {
			if kind == "clients" {
				return tn.clients
			}
			return tn.invoices
		}
		unknown := get("00000000-0000-4000-8000-0000000000ff")
		expectProblem(t, unknown, 404, "not_found")
		var foreign []string
		for _, tn := range r.all {
			if tn == a.tenant {
				continue
			}
			for _, id := range sample(idSet(tn), 4) {
				foreign = append(foreign, id, strings.ToUpper(id))
			}
		}
		for _, id := range append(foreign, nonUUIDs...) {
			sameAnswer(t, fmt.Sprintf("%s GET %s/%.40s", a, kind, id), get(id), unknown)
		}
		if got := get(sample(idSet(a.tenant), 1)[0]); got.Status != 200 {
			t.Errorf("%s cannot read its own %s: %d", a, kind, got.Status)
		}
	}
}

func (r *isolationRun) search(t *testing.T, a isolationActor) {
	if !a.can("clients:read") {
		return
	}
	for _, tn := range r.all {
		if tn == a.tenant {
			continue
		}
		for _, term := range tn.names {
			if len([]rune(term)) > 100 {
				continue
			}
			for id := range listAll(t, r.base, a, "/api/v1/v1/clients?search="+url.QueryEscape(term)) {
				if !a.tenant.clients[id] {
					t.Errorf("%s searching %q found %s, not its own", a, term, id)
				}
			}
		}
	}
}

// companyHeader: a UUID that is not the key's company is 403
// company_mismatch, one answer for all; a value that is no UUID is 400
// invalid_company_id, one answer for all too.
func (r *isolationRun) companyHeader(t *testing.T) {
	t.Parallel()
	suspended := isolationActor{tenant: &tenant{co: coS, mode: invoicing.Live}, scopes: allScopes, key: r.in.key(t, coS, invoicing.Live, allScopes).Key}
	first := map[string]resp{}
	for _, a := range append(slices.Clone(r.actors), suspended) {
		for _, other := range []string{coA, coB, coS, strings.ToUpper(coB), "00000000-0000-4000-8000-0000000000ee", "not-a-company", "' OR 1=1 --"} {
			if strings.EqualFold(other, a.tenant.co) {
				continue
			}
			status, code := 403, "company_mismatch"
			if _, ok := invoicing.CanonicalUUID(other); !ok {
				status, code = 400, "invalid_company_id"
			}
			for _, path := range []string{"/api/v1/v1/invoices", "/api/v1/v1/clients/" + sample(r.tenants[coB+"LIVE"].clients, 1)[0]} {
				got := do(t, r.base, req{Path: path, Key: a.key, Company: other})
				expectProblem(t, got, status, code)
				if first[code].Status == 0 {
					first[code] = got
				}
				sameAnswer(t, fmt.Sprintf("%s as %s on %s", a, other, path), got, first[code])
			}
		}
	}
}

func (r *isolationRun) creates(t *testing.T) {
	actors, base := r.actors, r.base
	aLive, aTest, bLive, bTest := actors[0], actors[4], actors[8], actors[12]
	if aLive.tenant.co != coA || aTest.tenant.mode != invoicing.Test || bLive.tenant.co != coB || bTest.tenant.mode != invoicing.Test {
		t.Fatal("actor order changed")
	}
	create := func(a isolationActor, company, body string) resp {
		return do(t, base, req{Method: "POST", Path: "/api/v1/v1/clients", Key: a.key, Company: company, Body: body})
	}
	// Naming the other company with one's own key creates nothing there.
	for _, a := range actors {
		if a.tenant.co != coB {
			expectProblem(t, create(a, coB, `{"name":"Intruder Lda"}`), 403, "company_mismatch")
		}
	}
	if got := listAll(t, base, bLive, "/api/v1/v1/clients?search=Intruder"); len(got) != 0 {
		t.Errorf("a create naming company B reached it: %v", got)
	}
	// A NIF another tenant registered is free to use: a 409 would tell
	// that the other tenant has a client with it.
	nif := fmt.Sprintf("4%08d", time.Now().UnixNano()%1e8)
	if got := create(bLive, coB, `{"name":"Owner Of NIF","nif":"`+nif+`"}`); got.Status != 201 {
		t.Fatalf("B LIVE create: %d %s", got.Status, got.Body)
	}
	for _, a := range []isolationActor{aLive, bTest} {
		if got := create(a, a.tenant.co, `{"name":"Same NIF Lda","nif":"`+nif+`"}`); got.Status != 201 {
			t.Errorf("%s creating a NIF only B LIVE has: %d %s", a, got.Status, got.Body)
		}
	}
	r.sandboxClientStaysThere(t, aTest, aLive, bLive, bTest)
}

// sandboxClientStaysThere: a client created with A's TEST key exists for
// A TEST only.
func (r *isolationRun) sandboxClientStaysThere(t *testing.T, aTest isolationActor, others ...isolationActor) {
	t.Helper()
	base := r.base
	got := do(t, base, req{Method: "POST", Path: "/api/v1/v1/clients", Key: aTest.key, Company: coA, Body: `{"name":"Isolation Sandbox Client"}`})
	if got.Status != 201 {
		t.Fatalf("A TEST create: %d %s", got.Status, got.Body)
	}
	id := got.json(t)["id"].(string)
	if got := do(t, base, req{Path: "/api/v1/v1/clients/" + id, Key: aTest.key, Company: coA}); got.Status != 200 {
		t.Fatalf("A TEST reads its new client: %d", got.Status)
	}
	for _, a := range others {
		unknown := do(t, base, req{Path: "/api/v1/v1/clients/00000000-0000-4000-8000-0000000000ff", Key: a.key, Company: a.tenant.co})
		sameAnswer(t, a.String()+" GET the sandbox client", do(t, base, req{Path: "/api/v1/v1/clients/" + id, Key: a.key, Company: a.tenant.co}), unknown)
		for _, path := range []string{"/api/v1/v1/clients", "/api/v1/v1/clients?search=Isolation+Sandbox"} {
			if listAll(t, base, a, path)[id] {
				t.Errorf("%s lists the sandbox client of A via %s", a, path)
			}
		}
	}
}
