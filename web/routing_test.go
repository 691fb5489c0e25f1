package web

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
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

	rt := newRouter(nil)
	var got string
	rt.Handle(http.MethodGet, "/x/:id", func(_ *http.Request, p Params) (Answer, error) {
		got = p.ByName("id")
		return Answer{}, nil
	})
	for raw, want := range map[string]string{"/x/a%2Fb": "a/b", "/x/%252F": "%2F", "/x/a%2F%25": "a/%", "/x/%7E": "~"} {
		got = "(not called)"
		_, err := rt.serve(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, raw, nil))
		if err != nil || got != want {
			t.Errorf("GET %s: id %q, %v; want %q", raw, got, err, want)
		}
	}
}
