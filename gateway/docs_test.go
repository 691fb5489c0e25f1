package gateway

import (
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/invoicing-ao/gateway/gateway/apidocs"
	"github.com/invoicing-ao/gateway/web"
)

// The document's list of error codes is the API's error table, exactly
// (web.ProblemCodes: web's own codes and every defined one the gateway
// links): a code added without documenting it, or documented and never
// produced, fails here.
func TestDocumentListsEveryProblemCode(t *testing.T) {
	t.Parallel()
	p, err := portal()
	if err != nil {
		t.Fatal(err)
	}
	codes, desc, err := apidocs.ProblemCodes(p.Document())
	if err != nil {
		t.Fatal(err)
	}
	var table []string
	for c := range web.ProblemCodes() {
		table = append(table, c)
	}
	sort.Strings(table)
	doc := slices.Clone(codes)
	sort.Strings(doc)
	if !slices.Equal(doc, table) {
		t.Errorf("ProblemCode enum in openapi.yaml:\n  %v\nproblemCodes in problem.go:\n  %v", doc, table)
	}
	for _, c := range table {
		// Each explanation starts with the code's status, as the table has it.
		if want := strings.TrimSpace(desc[c]); !strings.HasPrefix(want, strconv.Itoa(web.ProblemCodes()[c].Status)+". ") {
			t.Errorf("x-enumDescriptions[%s] = %q: want it to start with %q", c, want, strconv.Itoa(web.ProblemCodes()[c].Status)+". ")
		}
	}
	if len(desc) != len(codes) {
		t.Errorf("%d codes, %d explanations", len(codes), len(desc))
	}
}

// The portal is served without a key, with the right types, validators,
// compression and, for pages, a Content-Security-Policy; the problem type
// of every code resolves to an anchor of the errors guide.
func TestDocsRoutes(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(New(Config{}).Handler())
	defer srv.Close()
	get := func(path string, hdr map[string]string) (*http.Response, []byte) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		tr := &http.Transport{DisableCompression: true}
		res, err := (&http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		if err != nil {
			t.Fatal(err)
		}
		return res, b
	}
	cases := []struct{ path, ctype, body string }{
		{"/api/openapi.yaml", "application/yaml; charset=utf-8", "openapi: 3.1.0"},
		{"/api/openapi.json", "application/json; charset=utf-8", `"openapi": "3.1.0"`},
		{"/api/collection.json", "application/json; charset=utf-8", "collection/v2.1.0"},
		{"/api/docs", "text/html; charset=utf-8", `data-url="/api/openapi.yaml"`},
		{"/api/docs/errors", "text/html; charset=utf-8", `<section id="nif_conflict">`},
		{"/api/docs/assets/scalar-api-reference-" + apidocs.ScalarVersion + ".js", "text/javascript; charset=utf-8", "@scalar/api-reference@" + apidocs.ScalarVersion},
	}
	for _, c := range cases {
		res, b := get(c.path, nil)
		if res.StatusCode != 200 || res.Header.Get("Content-Type") != c.ctype || !strings.Contains(string(b), c.body) {
			t.Errorf("%s: %d %q, body has %q: %v", c.path, res.StatusCode, res.Header.Get("Content-Type"), c.body, strings.Contains(string(b), c.body))
			continue
		}
		if cc := res.Header.Get("Cache-Control"); !strings.HasPrefix(cc, "public") {
			t.Errorf("%s: Cache-Control %q", c.path, cc)
		}
		if strings.HasPrefix(c.ctype, "text/html") && !strings.Contains(res.Header.Get("Content-Security-Policy"), "default-src 'none'") {
			t.Errorf("%s: CSP %q", c.path, res.Header.Get("Content-Security-Policy"))
		}
		etag := res.Header.Get("ETag")
		if r2, _ := get(c.path, map[string]string{"If-None-Match": etag}); etag == "" || r2.StatusCode != http.StatusNotModified {
			t.Errorf("%s: ETag %q, revalidation %d", c.path, etag, r2.StatusCode)
		}
		if r3, gz := get(c.path, map[string]string{"Accept-Encoding": "gzip"}); r3.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(strings.NewReader(string(gz)))
			if err != nil {
				t.Fatal(err)
			}
			plain, err := io.ReadAll(zr)
			if err != nil || string(plain) != string(b) {
				t.Errorf("%s: gzip body differs (%v)", c.path, err)
			}
			if r3.Header.Get("ETag") == etag {
				t.Errorf("%s: the gzip and plain bodies share an ETag", c.path)
			}
		} else if len(b) > 100_000 {
			t.Errorf("%s: %d bytes served uncompressed to a gzip client", c.path, len(b))
		}
	}
	_, page := get("/api/docs/errors", nil)
	ids := regexp.MustCompile(`<section id="([a-z_]+)">`).FindAllStringSubmatch(string(page), -1)
	found := map[string]bool{}
	for _, m := range ids {
		found[m[1]] = true
	}
	for c := range web.ProblemCodes() {
		if !found[c] {
			t.Errorf("errors guide has no anchor for %s (problem type %s#%s)", c, apidocs.ErrorsPath, c)
		}
	}
	if res, _ := get("/api/docs/", nil); res.StatusCode != http.StatusMovedPermanently || res.Header.Get("Location") != "/api/docs" {
		t.Errorf("/api/docs/: %d %q", res.StatusCode, res.Header.Get("Location"))
	}
	if res, _ := get("/api/docs/nothing", nil); res.StatusCode != http.StatusNotFound {
		t.Errorf("/api/docs/nothing: %d", res.StatusCode)
	}
}
