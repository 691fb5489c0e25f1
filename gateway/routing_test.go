package gateway

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/julienschmidt/httprouter"

	"github.com/invoicing-ao/gateway/internal/apitest"
)

// A segment's escaped slash stays in the segment, and the handler gets the
// parameter as sent, decoded once.
func TestEscapedSlashStaysInItsSegment(t *testing.T) {
	cases := []struct{ raw, path string }{
		{"/x/a%2Fb", "/x/a%2Fb"},
		{"/x/a%2fb%2F", "/x/a%2Fb%2F"},
		{"/x/a%2Fb%20c", "/x/a%2Fb c"},
	}
	for _, c := range cases {
		u, err := url.Parse(c.raw)
		if err != nil {
			t.Fatal(err)
		}
		if got, escaped := routingPath(u); got != c.path || !escaped {
			t.Errorf("routingPath(%s) = %q, %v; want %q, true", c.raw, got, escaped, c.path)
		}
	}
	// No escaped slash (a literal "%2F" is "%252F"): the decoded path.
	for _, raw := range []string{"/x/a", "/x/%7Ea", "/x/a%20b", "/x/%25", "/x/%252F"} {
		u, _ := url.Parse(raw)
		if got, escaped := routingPath(u); got != u.Path || escaped {
			t.Errorf("routingPath(%s) = %q, %v; want the decoded path", raw, got, escaped)
		}
	}

	rt := newRoutes(nil)
	var got string
	rt.handle(http.MethodGet, "/x/:id", "GET /x/:id", func(_ http.ResponseWriter, _ *http.Request, p httprouter.Params) (answer, error) {
		got = p.ByName("id")
		return answer{}, nil
	})
	for raw, want := range map[string]string{"/x/a%2Fb": "a/b", "/x/%252F": "%2F", "/x/a%2F%25": "a/%", "/x/%7E": "~"} {
		got = "(not called)"
		_, err := rt.serve(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, raw, nil))
		if err != nil || got != want {
			t.Errorf("GET %s: id %q, %v; want %q", raw, got, err, want)
		}
	}
}

// Every operation's path, as the document writes it, is named by the 404 of
// a path that ends like it: routeHint's table is the document's.
func TestRouteHintKnowsEveryOperation(t *testing.T) {
	doc, err := apitest.Doc()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for path := range doc.Paths.Map() {
		tail, ok := strings.CutPrefix(path, apiPrefix)
		if !ok {
			t.Fatalf("%s: not under %s", path, apiPrefix)
		}
		n++
		sent := "/api/v1" + strings.ReplaceAll(tail, "{id}", "3b9a8f51")
		if got := routeHint(sent); !strings.Contains(got, " "+path+"?") {
			t.Errorf("routeHint(%s) = %q; want it to name %s", sent, got, path)
		}
	}
	if n != len(apiPaths) {
		t.Errorf("%d paths in the document, want %d (apiPaths)", n, len(apiPaths))
	}
}
