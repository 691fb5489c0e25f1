package apidocs

import (
	"bytes"
	"context"
	"encoding/json"
	"go/format"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"sigs.k8s.io/yaml"
)

func TestYAMLToJSON(t *testing.T) {
	cases := []struct{ in, want, err string }{
		{in: "a: 1500.00\nb: 7\nc: -0.5\nd: 1e3", want: `{"a":1500.00,"b":7,"c":-0.5,"d":1e3}`},
		{in: "z: 1\na: 2", want: `{"z":1,"a":2}`},
		{in: "s: '1500.00'\nt: yes-no\nu: null\nv: true\nw: ~", want: `{"s":"1500.00","t":"yes-no","u":null,"v":true,"w":null}`},
		{in: "a: &x {k: [1, 2]}\nb: *x", want: `{"a":{"k":[1,2]},"b":{"k":[1,2]}}`},
		{in: "'200': ok\n404: no", want: `{"200":"ok","404":"no"}`},
		{in: "html: <a href=\"x\">&</a>", want: `{"html":"<a href=\"x\">&</a>"}`},
		{in: "a: .inf", err: "no JSON form"},
		{in: "a: 0x1F", err: "no JSON form"},
		{in: "a: 1\na: 2", err: "duplicate"},
		{in: "a: &x {k: 1}\nb:\n  <<: *x", err: "plain keys"},
	}
	for _, c := range cases {
		got, err := yamlToJSON([]byte(c.in))
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: error %v, want %q", c.in, err, c.err)
			}
			continue
		}
		var compact bytes.Buffer
		if err != nil || json.Compact(&compact, got) != nil || compact.String() != c.want {
			t.Errorf("%q: %s (%v), want %s", c.in, compact.String(), err, c.want)
		}
	}
}

// The served JSON means what the YAML means (a generic converter agrees, up
// to number formatting), and kin-openapi loads both into the same document.
func TestJSONIsTheDocument(t *testing.T) {
	p, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := yaml.YAMLToJSON(documentYAML)
	if err != nil {
		t.Fatal(err)
	}
	var a, b any
	if err := json.Unmarshal(ref, &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(p.JSON(), &b); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Fatal("openapi.json differs from openapi.yaml")
	}
	if !bytes.Contains(p.JSON(), []byte(`"total": 1500.00`)) {
		t.Error("money examples lost their decimals in openapi.json")
	}
	for _, src := range [][]byte{documentYAML, p.JSON()} {
		doc, err := openapi3.NewLoader().LoadFromData(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := doc.Validate(context.Background()); err != nil {
			t.Fatalf("the document is not valid OpenAPI (examples included): %v", err)
		}
		if !doc.IsOpenAPI31OrLater() {
			t.Error("not OpenAPI 3.1")
		}
	}
}

// Every operation has its scope stated three ways that agree, and code
// samples in curl, JavaScript, Python and Go; the Go samples are gofmt'ed
// programs.
func TestOperationsDocumentScopesAndSamples(t *testing.T) {
	p, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	ops, err := operations(p.Document())
	if err != nil {
		t.Fatal(err)
	}
	if len(ops) != 6 {
		t.Fatalf("%d operations, want the API's six", len(ops))
	}
	scopes := map[string]string{"listInvoices": "invoices:read", "getInvoice": "invoices:read",
		"listClients": "clients:read", "getClient": "clients:read", "createClient": "clients:write", "listEvents": "events:read"}
	for _, op := range ops {
		o := dig(p.Document(), "paths", op.Path, strings.ToLower(op.Method)).(map[string]any)
		want, ok := scopes[op.ID]
		if !ok {
			t.Errorf("unexpected operation %s", op.ID)
			continue
		}
		if xs, _ := o["x-scopes"].([]any); len(xs) != 1 || xs[0] != want {
			t.Errorf("%s: x-scopes %v, want [%s]", op.ID, o["x-scopes"], want)
		}
		if !strings.Contains(op.Description, "Scope: `"+want+"`") {
			t.Errorf("%s: the description does not state scope %s", op.ID, want)
		}
		langs := map[string]string{}
		samples, _ := o["x-codeSamples"].([]any)
		for _, s := range samples {
			m := s.(map[string]any)
			langs[m["lang"].(string)] = m["source"].(string)
		}
		for _, l := range []string{"Shell", "JavaScript", "Python", "Go"} {
			if langs[l] == "" {
				t.Errorf("%s: no %s sample", op.ID, l)
			}
		}
		if src := langs["Go"]; src != "" {
			formatted, err := format.Source([]byte(src))
			if err != nil || string(formatted) != src {
				t.Errorf("%s: Go sample does not parse or is not gofmt'ed: %v", op.ID, err)
			}
		}
		if !strings.Contains(langs["Shell"], "curl ") {
			t.Errorf("%s: the Shell sample is not curl", op.ID)
		}
	}
}

// The collection is a v2.1 collection with the promised variables and
// authentication, one request per operation (each with tests), and error
// requests whose codes and statuses the document lists.
func TestCollectionCoversTheDocument(t *testing.T) {
	p, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	var c pmCollection
	if err := json.Unmarshal(p.Collection(), &c); err != nil {
		t.Fatal(err)
	}
	if c.Info.Schema != postmanSchema || c.Auth == nil || c.Auth.Type != "bearer" || c.Auth.Bearer[0].Value != "{{apiKey}}" {
		t.Fatalf("collection info/auth: %+v %+v", c.Info, c.Auth)
	}
	vars := map[string]bool{}
	for _, v := range c.Variable {
		vars[v.Key] = true
	}
	for _, v := range []string{"baseUrl", "apiKey", "companyId"} {
		if !vars[v] {
			t.Errorf("no variable %s", v)
		}
	}
	requests := map[string]int{}
	var walk func([]pmItem)
	walk = func(items []pmItem) {
		for _, it := range items {
			walk(it.Item)
			if it.Request == nil {
				continue
			}
			if len(it.Event) == 0 || !strings.Contains(strings.Join(it.Event[0].Script.Exec, "\n"), "pm.response.to.have.status") {
				t.Errorf("%s: no status test", it.Name)
			}
			path := "/" + strings.Join(it.Request.URL.Path, "/")
			if it.Request.URL.Host[0] != "{{baseUrl}}" || !strings.HasPrefix(it.Request.URL.Raw, "{{baseUrl}}"+path) {
				t.Errorf("%s: URL %+v", it.Name, it.Request.URL)
			}
			requests[it.Request.Method+" "+path]++
		}
	}
	walk(c.Item)
	ops, _ := operations(p.Document())
	for _, op := range ops {
		key := op.Method + " " + strings.ReplaceAll(op.Path, "{id}", ":id")
		if requests[key] == 0 {
			t.Errorf("operation %s (%s) is not in the collection", op.ID, key)
		}
	}
	codes, _, _ := ProblemCodes(p.Document())
	for _, e := range errorCases {
		if !contains(codes, e.code) {
			t.Errorf("%s: code %s is not in the document", e.name, e.code)
		}
		op := dig(p.Document(), "paths", strings.Split(e.path, "?")[0])
		if op == nil {
			op = dig(p.Document(), "paths", "/api/v1/v1/invoices/{id}")
		}
		if dig(op, strings.ToLower(e.method), "responses", itoa(e.status)) == nil {
			t.Errorf("%s: status %d is not documented for %s %s", e.name, e.status, e.method, e.path)
		}
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestVendoredExplorerVersion(t *testing.T) {
	if !bytes.Contains(scalarJS, []byte("@scalar/api-reference@"+ScalarVersion)) {
		t.Errorf("ui/scalar-api-reference.js is not @scalar/api-reference %s", ScalarVersion)
	}
	if len(scalarJS) > 5<<20 {
		t.Errorf("the vendored explorer is %d bytes", len(scalarJS))
	}
}

// The document keeps to the forms that client generators with default
// settings (oapi-codegen, openapi-typescript) turn into working types; each
// rule is a failure seen with a generator (docs/integrators.md, Clients):
//   - no allOf: an allOf that overrides a member types it as nothing
//     (TypeScript Record<string, never>, Go interface{} or a struct of the
//     override alone), and one that only adds required is ignored;
//   - anyOf only to make a named schema nullable ([$ref, {type: null}]);
//   - no null in an enum (oapi-codegen makes it a constant "<nil>");
//   - every number says how Go reads it exactly (x-go-type: json.Number),
//     else oapi-codegen makes it a float32;
//   - no schema named as what oapi-codegen writes itself (Client, NewClient…);
//   - one server, the origin, and paths written in full.
func TestDocumentSuitsGenerators(t *testing.T) {
	p, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	doc := p.Document()
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch v := v.(type) {
		case map[string]any:
			if _, ok := v["allOf"]; ok {
				t.Errorf("%s: allOf", path)
			}
			if any, ok := v["anyOf"].([]any); ok && (len(any) != 2 || dig(any[0], "$ref") == nil || dig(any[1], "type") != "null") {
				t.Errorf("%s: anyOf other than [$ref, {type: null}]", path)
			}
			if enum, ok := v["enum"].([]any); ok && contains(toStrings(enum), "") {
				t.Errorf("%s: null in an enum", path)
			}
			if v["type"] == "number" && v["x-go-type"] != "json.Number" {
				t.Errorf("%s: a number without x-go-type: json.Number", path)
			}
			for k, e := range v {
				walk(path+"/"+k, e)
			}
		case []any:
			for i, e := range v {
				walk(path+"/"+strconv.Itoa(i), e)
			}
		}
	}
	walk("#", doc)
	generated := []string{"Client", "NewClient", "ClientOption", "ClientInterface", "ClientWithResponses",
		"NewClientWithResponses", "ClientWithResponsesInterface", "HttpRequestDoer", "RequestEditorFn"}
	for name := range dig(doc, "components", "schemas").(map[string]any) {
		if contains(generated, name) || strings.HasPrefix(name, "New") || strings.HasPrefix(name, "Parse") ||
			strings.HasSuffix(name, "Response") || strings.HasSuffix(name, "Params") {
			t.Errorf("schema %s is named like code oapi-codegen generates", name)
		}
	}
	if servers, _ := doc["servers"].([]any); len(servers) != 1 || dig(servers[0], "url") != "/" {
		t.Errorf("servers %v: want the origin, /", doc["servers"])
	}
	for path := range doc["paths"].(map[string]any) {
		if !strings.HasPrefix(path, "/api/v1/v1/") {
			t.Errorf("path %s is not written in full", path)
		}
	}
	// InvoiceDetail is Invoice plus transmission, member for member.
	inv := dig(doc, "components", "schemas", "Invoice", "properties").(map[string]any)
	det := dig(doc, "components", "schemas", "InvoiceDetail", "properties").(map[string]any)
	if len(det) != len(inv)+1 || det["transmission"] == nil {
		t.Errorf("InvoiceDetail members %d, Invoice %d: want Invoice's and transmission", len(det), len(inv))
	}
	for k, v := range inv {
		if !reflect.DeepEqual(det[k], v) {
			t.Errorf("InvoiceDetail.%s differs from Invoice.%s", k, k)
		}
	}
}

func toStrings(vs []any) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i], _ = v.(string)
	}
	return out
}
