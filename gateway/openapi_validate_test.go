package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"

	"github.com/invoicing-ao/gateway/gateway/apidocs"
)

// The OpenAPI document, loaded and validated once per test binary.
var openAPIDoc = sync.OnceValues(func() (*openapi3.T, error) {
	doc, err := openapi3.NewLoader().LoadFromData(apidocs.YAML())
	if err != nil {
		return nil, err
	}
	return doc, doc.Validate(context.Background())
})

// validateAgainstOpenAPI checks one answer of the end-to-end suite against
// the OpenAPI document, so that the document and the code cannot drift:
// an answer of a documented operation must be one of its documented
// responses (status, headers, body), and any other error of the public
// listener must still be a documented Problem. Admin calls and answers of
// undocumented routes that are not errors (health, docs) are not the public
// API's and are skipped.
func validateAgainstOpenAPI(t *testing.T, q req, r resp) {
	t.Helper()
	if strings.HasPrefix(q.Path, "/admin/") || q.Method == http.MethodHead || q.Method == http.MethodOptions {
		return
	}
	doc, err := openAPIDoc()
	if err != nil {
		t.Fatalf("openapi.yaml: %v", err)
	}
	u, err := url.Parse(q.Path)
	if err != nil {
		t.Fatalf("path %q: %v", q.Path, err)
	}
	route, params := findOperation(doc, q.Method, u.EscapedPath())
	if route == nil {
		if r.Status >= 400 {
			validateProblem(t, doc, q, r)
		}
		return
	}
	hr, err := http.NewRequest(q.Method, "http://gateway"+q.Path, nil)
	if err != nil {
		t.Fatal(err)
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: hr, PathParams: params, Route: route},
		Status:                 r.Status,
		Header:                 r.Header,
		Body:                   io.NopCloser(bytes.NewReader(r.Body)),
		Options:                &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		t.Errorf("%s %s: the answer does not match openapi.yaml: %v\nstatus %d, body %.600s", q.Method, q.Path, err, r.Status, r.Body)
	}
	validateProblemCode(t, route.Operation, q, r)
}

// validateProblemCode checks an error's code against the codes its response
// lists (x-problem-codes: the schema is the whole Problem, so that generated
// clients get one problem type, and the per-response list is this extension).
func validateProblemCode(t *testing.T, op *openapi3.Operation, q req, r resp) {
	t.Helper()
	if r.Status < 400 {
		return
	}
	ref := op.Responses.Status(r.Status)
	if ref == nil || ref.Value == nil {
		return // ValidateResponse reported it
	}
	mt := ref.Value.Content.Get("application/problem+json")
	if mt == nil {
		t.Errorf("%s %s: response %d has no application/problem+json content", q.Method, q.Path, r.Status)
		return
	}
	listed, _ := mt.Extensions["x-problem-codes"].([]any)
	var p struct{ Code string }
	_ = json.Unmarshal(r.Body, &p)
	for _, c := range listed {
		if c == p.Code {
			return
		}
	}
	t.Errorf("%s %s: code %q is not among response %d's x-problem-codes %v", q.Method, q.Path, p.Code, r.Status, listed)
}

// findOperation matches a request's escaped path against the document's
// paths (under its first server's base path), segment by segment as sent: an
// escaped slash (%2F) stays inside its segment, as a parameter's value.
func findOperation(doc *openapi3.T, method, path string) (*routers.Route, map[string]string) {
	base := ""
	if len(doc.Servers) > 0 {
		base = strings.TrimSuffix(doc.Servers[0].URL, "/")
	}
	rest, ok := strings.CutPrefix(path, base)
	if !ok {
		return nil, nil
	}
	segs := strings.Split(rest, "/")
	for i, s := range segs {
		if d, err := url.PathUnescape(s); err == nil {
			segs[i] = d
		}
	}
	for tmpl, item := range doc.Paths.Map() {
		tsegs := strings.Split(tmpl, "/")
		if len(tsegs) != len(segs) {
			continue
		}
		params := map[string]string{}
		match := true
		for i, ts := range tsegs {
			if strings.HasPrefix(ts, "{") && strings.HasSuffix(ts, "}") && segs[i] != "" {
				params[ts[1:len(ts)-1]] = segs[i]
			} else if ts != segs[i] {
				match = false
				break
			}
		}
		if !match {
			continue
		}
		op := item.GetOperation(method)
		if op == nil {
			return nil, nil // a documented path, an undocumented method: 405
		}
		return &routers.Route{Spec: doc, Server: doc.Servers[0], Path: tmpl, PathItem: item, Method: method, Operation: op}, params
	}
	return nil, nil
}

// validateProblem checks an error answer outside the documented operations
// (unknown path, wrong method, readiness) against the Problem schema.
func validateProblem(t *testing.T, doc *openapi3.T, q req, r resp) {
	t.Helper()
	if ct := r.Header.Get("Content-Type"); ct != "application/problem+json" {
		t.Errorf("%s %s: error with Content-Type %q", q.Method, q.Path, ct)
		return
	}
	var v any
	if err := json.Unmarshal(r.Body, &v); err != nil {
		t.Errorf("%s %s: problem body: %v", q.Method, q.Path, err)
		return
	}
	schema := doc.Components.Schemas["Problem"].Value
	if err := schema.VisitJSON(v, openapi3.EnableJSONSchema2020(), openapi3.MultiErrors()); err != nil {
		t.Errorf("%s %s: the problem does not match openapi.yaml's Problem: %v\n%.600s", q.Method, q.Path, err, r.Body)
	}
}
