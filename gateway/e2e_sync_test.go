package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/backend"
	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
)

// pageOf is a list answer's envelope.
type pageOf struct {
	Data       []struct{ ID, UpdatedAt string }
	Total      int
	Page       int
	NextCursor *string
}

func listPage(t *testing.T, in *instance, key, company, path string) pageOf {
	t.Helper()
	r := do(t, in.pub.URL, req{Path: path, Key: key, Company: company})
	if r.Status != 200 {
		t.Fatalf("%s: %d %s", path, r.Status, r.Body)
	}
	var p pageOf
	if err := json.Unmarshal(r.Body, &p); err != nil {
		t.Fatal(err)
	}
	return p
}

// walkCursor follows nextCursor from the first page of path (a list with a
// query string) and returns the ids in order.
func walkCursor(t *testing.T, in *instance, key, company, path string) []string {
	t.Helper()
	var ids []string
	p := listPage(t, in, key, company, path)
	for {
		for _, d := range p.Data {
			ids = append(ids, d.ID)
		}
		if p.NextCursor == nil {
			return ids
		}
		p = listPage(t, in, key, company, path+"&cursor="+url.QueryEscape(*p.NextCursor))
		if p.Page != 0 {
			t.Fatalf("a page by cursor says page %d", p.Page)
		}
	}
}

func walkPages(t *testing.T, in *instance, key, company, path string) []string {
	t.Helper()
	var ids []string
	for page := 1; ; page++ {
		p := listPage(t, in, key, company, path+"&page="+strconv.Itoa(page))
		if len(p.Data) == 0 {
			return ids
		}
		for _, d := range p.Data {
			ids = append(ids, d.ID)
		}
	}
}

func TestCursorsThroughTheAPI(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	in := w.start()
	k := in.key(t, coA, invoicing.Live, allScopes)
	for _, path := range []string{"/api/v1/v1/invoices?pageSize=7", "/api/v1/v1/invoices?pageSize=5&status=PAID",
		"/api/v1/v1/clients?pageSize=3", "/api/v1/v1/clients?pageSize=4&search=a"} {
		byCursor, byPage := walkCursor(t, in, k.Key, coA, path), walkPages(t, in, k.Key, coA, path)
		if len(byCursor) == 0 || !slices.Equal(byCursor, byPage) {
			t.Fatalf("%s: by cursor %d ids, by page %d: they differ", path, len(byCursor), len(byPage))
		}
	}
}

// A cursor answers only the list it was made for: another company (whose key
// would otherwise read its own data at that position), another mode, another
// filter, an altered cursor, or one with page, are 400 invalid_parameter.
func TestCursorIsolation(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	in := w.start()
	ka := in.key(t, coA, invoicing.Live, allScopes)
	kb := in.key(t, coB, invoicing.Live, allScopes)
	kt := in.key(t, coA, invoicing.Test, allScopes)
	p := listPage(t, in, ka.Key, coA, "/api/v1/v1/invoices?pageSize=2")
	if p.NextCursor == nil {
		t.Fatal("no next page")
	}
	c := url.QueryEscape(*p.NextCursor)
	altered := []byte(*p.NextCursor)
	altered[5] ^= 1
	for _, tc := range []struct {
		name, key, company, path string
	}{
		{"another company", kb.Key, coB, "/api/v1/v1/invoices?pageSize=2&cursor=" + c},
		{"another mode", kt.Key, coA, "/api/v1/v1/invoices?pageSize=2&cursor=" + c},
		{"another filter", ka.Key, coA, "/api/v1/v1/invoices?pageSize=2&status=PAID&cursor=" + c},
		{"another list", ka.Key, coA, "/api/v1/v1/clients?pageSize=2&cursor=" + c},
		{"changes instead", ka.Key, coA, "/api/v1/v1/invoices?pageSize=2&updatedSince=2020-01-01T00:00:00Z&cursor=" + c},
		{"altered", ka.Key, coA, "/api/v1/v1/invoices?pageSize=2&cursor=" + url.QueryEscape(string(altered))},
		{"garbage", ka.Key, coA, "/api/v1/v1/invoices?cursor=not-a-cursor"},
		{"with page", ka.Key, coA, "/api/v1/v1/invoices?page=2&cursor=" + c},
	} {
		r := do(t, in.pub.URL, req{Path: tc.path, Key: tc.key, Company: tc.company})
		m := expectProblem(t, r, 400, "invalid_parameter")
		if !strings.Contains(string(r.Body), `"field":"cursor"`) {
			t.Errorf("%s: %v does not name the cursor", tc.name, m)
		}
	}
	// The same cursor with another page size is the same list.
	if r := do(t, in.pub.URL, req{Path: "/api/v1/v1/invoices?pageSize=9&cursor=" + c, Key: ka.Key, Company: coA}); r.Status != 200 {
		t.Fatalf("another page size: %d %s", r.Status, r.Body)
	}
}

// updatedSince lists changes oldest first and leaves the last moments for
// the next call; a walk by cursor over it is the same as by page.
func TestChangesSince(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	in := w.start(withStore(func(c *backend.Config) { c.ChangesSettle = 50 * time.Millisecond }))
	k := in.key(t, coA, invoicing.Live, allScopes)
	path := "/api/v1/v1/invoices?pageSize=6&updatedSince=2000-01-01T00:00:00Z"
	all := listPage(t, in, k.Key, coA, path)
	var last time.Time
	for _, d := range all.Data {
		at, err := time.Parse(time.RFC3339Nano, d.UpdatedAt)
		if err != nil || at.Before(last) {
			t.Fatalf("changes not oldest first: %s after %s", d.UpdatedAt, last)
		}
		last = at
	}
	if got, want := walkCursor(t, in, k.Key, coA, path), walkPages(t, in, k.Key, coA, path); !slices.Equal(got, want) || len(got) != all.Total {
		t.Fatalf("changes by cursor (%d) and by page (%d) differ, total %d", len(got), len(want), all.Total)
	}

	// A client created now is a change: listed once the settle time passed.
	since := time.Now().UTC().Add(-time.Second).Format(time.RFC3339Nano)
	created := do(t, in.pub.URL, req{Method: "POST", Path: clientsPath, Key: k.Key, Company: coA, Body: `{"name":"Mudança Recente"}`})
	id := created.json(t)["id"]
	testenv.Eventually(t, "the new client listed as a change", func() error {
		p := listPage(t, in, k.Key, coA, "/api/v1/v1/clients?updatedSince="+url.QueryEscape(since))
		if len(p.Data) > 1 {
			t.Fatalf("changes since %s: %+v, want only the new client", since, p)
		}
		if len(p.Data) == 1 && p.Data[0].ID == id {
			return nil
		}
		return fmt.Errorf("changes since %s: %+v", since, p)
	})
	expectProblem(t, do(t, in.pub.URL, req{Path: "/api/v1/v1/clients?updatedSince=yesterday", Key: k.Key, Company: coA}), 400, "invalid_parameter")
}

// Get invoice and get client carry an ETag; If-None-Match with it is a 304
// without a body, still rate limited and counted.
func TestConditionalGet(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	in := w.start()
	k := in.key(t, coA, invoicing.Live, allScopes)
	inv := listPage(t, in, k.Key, coA, "/api/v1/v1/invoices?pageSize=1").Data[0].ID
	cli := listPage(t, in, k.Key, coA, "/api/v1/v1/clients?pageSize=1").Data[0].ID
	for _, path := range []string{"/api/v1/v1/invoices/" + inv, "/api/v1/v1/clients/" + cli} {
		first := do(t, in.pub.URL, req{Path: path, Key: k.Key, Company: coA})
		tag := first.Header.Get("ETag")
		if first.Status != 200 || tag == "" {
			t.Fatalf("%s: %d, ETag %q", path, first.Status, tag)
		}
		for _, inm := range []string{tag, "W/" + tag, `"other", ` + tag, "*"} {
			r := do(t, in.pub.URL, req{Path: path, Key: k.Key, Company: coA, Header: map[string]string{"If-None-Match": inm}})
			if r.Status != 304 || len(r.Body) != 0 || r.Header.Get("ETag") != tag || r.Header.Get("RateLimit") == "" {
				t.Fatalf("%s If-None-Match %s: %d %q, ETag %q", path, inm, r.Status, r.Body, r.Header.Get("ETag"))
			}
		}
		r := do(t, in.pub.URL, req{Path: path, Key: k.Key, Company: coA, Header: map[string]string{"If-None-Match": `"stale"`}})
		if r.Status != 200 || string(r.Body) != string(first.Body) {
			t.Fatalf("%s with a stale tag: %d", path, r.Status)
		}
	}
	if err := in.usage.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	days, err := in.usage.Days(context.Background(), coA, 1)
	if err != nil || days[0].Live["3xx"] != 8 {
		t.Fatalf("304s counted: %+v, %v; want 8", days, err)
	}
}
