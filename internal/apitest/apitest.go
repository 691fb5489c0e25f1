// Package apitest checks, for the tests of both listeners, what every answer
// of the gateway promises: a request id, errors as complete problems that
// never mention a key, and agreement with the OpenAPI document (an answer of
// a documented operation is one of its documented responses). It is
// imported by tests only.
package apitest

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

// Doc is the OpenAPI document, loaded and validated once per test binary.
var Doc = sync.OnceValues(func() (*openapi3.T, error) {
	doc, err := openapi3.NewLoader().LoadFromData(apidocs.YAML())
	if err != nil {
		return nil, err
	}
	return doc, doc.Validate(context.Background())
})

// Request is what Check needs of a request: its method and path (with the
// query string).
type Request struct{ Method, Path string }

// Answer is what Check needs of an answer.
type Answer struct {
	Status int
	Header http.Header
	Body   []byte
}

// Check asserts what every answer must carry and the problem shape of every
// error, and checks the answer against the OpenAPI document.
func Check(t testing.TB, q Request, r Answer) {
	t.Helper()
	checkCommon(t, q, r)
	validateAgainstOpenAPI(t, q, r)
}

// checkCommon asserts what every answer must carry, and the problem shape
// of every error.
func checkCommon(t testing.TB, q Request, r Answer) {
	t.Helper()
	if r.Header.Get("X-Request-Id") == "" {
		t.Errorf("%s %s: no X-Request-Id", q.Method, q.Path)
	}
	if r.Status < 400 {
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/problem+json" {
		t.Errorf("%s %s: error Content-Type %q", q.Method, q.Path, ct)
	}
	var p struct {
		Type, Title, Detail, Code, RequestID string
		Status                               int
	}
	if err := json.Unmarshal(r.Body, &p); err != nil {
		t.Fatalf("%s %s: problem body: %v: %s", q.Method, q.Path, err, r.Body)
	}
	// A replay's body is the first attempt's, byte for byte, requestId
	// included; X-Request-Id is the retry's own.
	replayed := r.Header.Get("Idempotent-Replayed") == "true"
	if p.Status != r.Status || p.Type == "" || p.Title == "" || p.Detail == "" || p.Code == "" ||
		p.RequestID == "" || (p.RequestID != r.Header.Get("X-Request-Id")) != replayed {
		t.Errorf("%s %s: incomplete problem %s", q.Method, q.Path, r.Body)
	}
	if strings.Contains(string(r.Body), "igw_") {
		t.Errorf("%s %s: a problem body mentions a key: %s", q.Method, q.Path, r.Body)
	}
}

// validateAgainstOpenAPI checks one answer of the end-to-end suite against
// the OpenAPI document, so that the document and the code cannot drift:
// an answer of a documented operation must be one of its documented
// responses (status, headers, body), and any other error of the public
// listener must still be a documented Problem. Admin calls and answers of
// undocumented routes that are not errors (health, docs) are not the public
// API's and are skipped.
func validateAgainstOpenAPI(t testing.TB, q Request, r Answer) {
	t.Helper()
	if strings.HasPrefix(q.Path, "/admin/") || q.Method == http.MethodHead || q.Method == http.MethodOptions {
		return
	}
	doc, err := Doc()
	if err != nil {
		t.Fatalf("openapi.yaml: %v", err)
	}
	u, err := url.Parse(q.Path)
	if err != nil {
		t.Fatalf("path %q: %v", q.Path, err)
	}
	route, params := FindOperation(doc, q.Method, u.EscapedPath())
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
func validateProblemCode(t testing.TB, op *openapi3.Operation, q Request, r Answer) {
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

// FindOperation matches a request's escaped path against the document's
// paths (under its first server's base path), segment by segment as sent: an
// escaped slash (%2F) stays inside its segment, as a parameter's value.
func FindOperation(doc *openapi3.T, method, path string) (*routers.Route, map[string]string) {
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
func validateProblem(t testing.TB, doc *openapi3.T, q Request, r Answer) {
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
