package apidocs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// The Postman collection (v2.1) is derived from the document: one request per
// operation, with the document's parameters and example body, in the order
// of the document's tags, then an "Errors" folder of requests that must fail
// in documented ways. Every request carries tests, so that running the
// collection (Newman) checks the API, and requests chain: listing invoices
// keeps an invoice id for getting one, creating a client keeps its id.

const postmanSchema = "https://schema.getpostman.com/json/collection/v2.1.0/collection.json"

type pmCollection struct {
	Info     pmInfo       `json:"info"`
	Auth     *pmAuth      `json:"auth,omitempty"`
	Event    []pmEvent    `json:"event,omitempty"`
	Variable []pmVariable `json:"variable"`
	Item     []pmItem     `json:"item"`
}

type pmInfo struct {
	PostmanID   string `json:"_postman_id"`
	Name        string `json:"name"`
	Description string `json:"description"`
	Schema      string `json:"schema"`
}

type pmAuth struct {
	Type   string       `json:"type"`
	Bearer []pmVariable `json:"bearer,omitempty"`
}

type pmVariable struct {
	Key         string `json:"key"`
	Value       string `json:"value"`
	Type        string `json:"type,omitempty"`
	Description string `json:"description,omitempty"`
	Disabled    bool   `json:"disabled,omitempty"`
}

type pmEvent struct {
	Listen string   `json:"listen"`
	Script pmScript `json:"script"`
}

type pmScript struct {
	Type string   `json:"type"`
	Exec []string `json:"exec"`
}

type pmItem struct {
	Name        string     `json:"name"`
	Description string     `json:"description,omitempty"`
	Item        []pmItem   `json:"item,omitempty"`
	Request     *pmRequest `json:"request,omitempty"`
	Event       []pmEvent  `json:"event,omitempty"`
}

type pmRequest struct {
	Method      string       `json:"method"`
	Header      []pmVariable `json:"header"`
	Body        *pmBody      `json:"body,omitempty"`
	URL         pmURL        `json:"url"`
	Auth        *pmAuth      `json:"auth,omitempty"`
	Description string       `json:"description,omitempty"`
}

type pmBody struct {
	Mode    string         `json:"mode"`
	Raw     string         `json:"raw"`
	Options map[string]any `json:"options,omitempty"`
}

type pmURL struct {
	Raw      string       `json:"raw"`
	Host     []string     `json:"host"`
	Path     []string     `json:"path"`
	Query    []pmVariable `json:"query,omitempty"`
	Variable []pmVariable `json:"variable,omitempty"`
}

// operation is what the collection needs of one of the document's operations.
type operation struct {
	ID, Method, Path, Summary, Tag, Description string
	Params                                      []map[string]any
	Body                                        string
	Success                                     string
}

// opScripts adds, per operation, the checks and the chaining beyond the
// status code. Every operation of the document must have an entry (a test
// checks it), so that a new operation is not silently left unchecked.
var opScripts = map[string]struct{ pre, test []string }{
	"listInvoices": {test: []string{
		`const page = pm.response.json();`,
		`pm.test("a page of invoices", () => {`,
		`  pm.expect(page.page).to.eql(1);`,
		`  pm.expect(page.data.length).to.be.at.most(page.pageSize);`,
		`  pm.expect(page.total).to.be.at.least(page.data.length);`,
		`});`,
		`if (page.data.length > 0) pm.collectionVariables.set("invoiceId", page.data[0].id);`,
	}},
	"getInvoice": {test: []string{
		`const inv = pm.response.json();`,
		`pm.test("the invoice asked for, with its transmission", () => {`,
		`  pm.expect(inv.id).to.eql(pm.collectionVariables.get("invoiceId"));`,
		`  pm.expect(inv.transmission.status).to.be.a("string");`,
		`});`,
	}},
	"listClients": {test: []string{
		`const page = pm.response.json();`,
		`pm.test("a page of clients", () => pm.expect(page.data.length).to.be.at.most(page.pageSize));`,
	}},
	"createClient": {
		pre: []string{
			`// A fresh company NIF (10 digits) for each run.`,
			`pm.collectionVariables.set("newNif", "5" + String(Math.floor(Math.random() * 1e9)).padStart(9, "0"));`,
		},
		test: []string{
			`const c = pm.response.json();`,
			`pm.test("Location names the new client", () => pm.expect(pm.response.headers.get("Location")).to.eql("/api/v1/v1/clients/" + c.id));`,
			`pm.test("the client as sent", () => pm.expect(c.nif).to.eql(pm.collectionVariables.get("newNif")));`,
			`pm.collectionVariables.set("clientId", c.id);`,
		},
	},
	"getClient": {test: []string{
		`pm.test("the client created before", () => pm.expect(pm.response.json().id).to.eql(pm.collectionVariables.get("clientId")));`,
	}},
	"listEvents": {test: []string{
		`const page = pm.response.json();`,
		`pm.test("a page of events, with a cursor to poll from", () => {`,
		`  pm.expect(page.data.length).to.be.at.most(page.pageSize);`,
		`  pm.expect(page.nextCursor).to.be.a("string");`,
		`});`,
	}},
}

// errorCase is a request of the Errors folder.
type errorCase struct {
	name, method, path, query, body string
	noKey, noCompany                bool
	status                          int
	code                            string
}

var errorCases = []errorCase{
	{name: "Get invoice: unknown id", method: "GET", path: "/api/v1/v1/invoices/00000000-0000-4000-8000-000000000000", status: 404, code: "not_found"},
	{name: "List invoices: pageSize over 100", method: "GET", path: "/api/v1/v1/invoices", query: "pageSize=101", status: 400, code: "invalid_parameter"},
	{name: "List invoices: unknown parameter", method: "GET", path: "/api/v1/v1/invoices", query: "pagesize=10", status: 400, code: "invalid_parameter"},
	{name: "List clients: no key", method: "GET", path: "/api/v1/v1/clients", noKey: true, status: 401, code: "missing_api_key"},
	{name: "List clients: no X-Company-Id", method: "GET", path: "/api/v1/v1/clients", noCompany: true, status: 400, code: "missing_company_id"},
	{name: "Create client: invalid fields", method: "POST", path: "/api/v1/v1/clients", body: `{"name": "", "nif": "12", "phone": "923"}`, status: 400, code: "invalid_body"},
	{name: "Create client: same NIF again", method: "POST", path: "/api/v1/v1/clients", body: `{"name": "Duplicate", "nif": "{{newNif}}"}`, status: 409, code: "nif_conflict"},
}

func buildCollection(doc map[string]any) ([]byte, error) {
	ops, err := operations(doc)
	if err != nil {
		return nil, err
	}
	// The document's paths are written in full and its server is the
	// origin, which is the collection's baseUrl.
	if base, _ := dig(doc, "servers").([]any); len(base) != 1 || dig(base[0], "url") != "/" {
		return nil, errors.New(`the document's one server must be the origin, "/"`)
	}
	info, _ := doc["info"].(map[string]any)
	c := pmCollection{
		Info: pmInfo{
			// A fixed id: importing the collection again updates it in place.
			PostmanID: "5d0f3a52-6c1e-4f0b-9a57-2f1c3b7e8d10",
			Name:      fmt.Sprintf("%v %v", info["title"], info["version"]),
			Description: "Generated from the OpenAPI document (" + YAMLPath + "). Set the variables " +
				"baseUrl (the gateway, e.g. http://localhost:8080), apiKey (a key with all three scopes) " +
				"and companyId, then run the collection: every request tests its answer.",
			Schema: postmanSchema,
		},
		Auth: &pmAuth{Type: "bearer", Bearer: []pmVariable{{Key: "token", Value: "{{apiKey}}", Type: "string"}}},
		Event: []pmEvent{{Listen: "test", Script: pmScript{Type: "text/javascript", Exec: []string{
			`pm.test("X-Request-Id on every answer", () => pm.expect(pm.response.headers.get("X-Request-Id")).to.match(/^[A-Za-z0-9._:-]{1,128}$/));`,
			`if (pm.response.code >= 400) {`,
			`  pm.test("errors are problem+json with a code", () => {`,
			`    pm.expect(pm.response.headers.get("Content-Type")).to.eql("application/problem+json");`,
			`    const p = pm.response.json();`,
			`    pm.expect(p.status).to.eql(pm.response.code);`,
			`    pm.expect(p.type).to.eql("` + ErrorsPath + `#" + p.code);`,
			`  });`,
			`}`,
		}}}},
		Variable: []pmVariable{
			{Key: "baseUrl", Value: "http://localhost:8080", Type: "string", Description: "The gateway's address, without a trailing slash."},
			{Key: "apiKey", Value: "", Type: "string", Description: "An API key (igw_live_… or igw_test_…) with invoices:read, clients:read, clients:write and events:read."},
			{Key: "companyId", Value: "", Type: "string", Description: "The key's company id (X-Company-Id)."},
			{Key: "invoiceId", Value: "", Type: "string", Description: "Set by List invoices."},
			{Key: "clientId", Value: "", Type: "string", Description: "Set by Create client."},
			{Key: "newNif", Value: "", Type: "string", Description: "Set by Create client."},
		},
	}
	folders := map[string]int{}
	for _, op := range ops {
		it, err := opItem(op)
		if err != nil {
			return nil, err
		}
		i, ok := folders[op.Tag]
		if !ok {
			i = len(c.Item)
			folders[op.Tag] = i
			c.Item = append(c.Item, pmItem{Name: op.Tag, Description: tagDescription(doc, op.Tag)})
		}
		c.Item[i].Item = append(c.Item[i].Item, it)
	}
	errs := pmItem{Name: "Errors", Description: "Requests that fail in documented ways; see " + ErrorsPath + "."}
	for _, e := range errorCases {
		errs.Item = append(errs.Item, errorItem(e))
	}
	c.Item = append(c.Item, errs)

	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	err = enc.Encode(c)
	return buf.Bytes(), err
}

func opItem(op operation) (pmItem, error) {
	sc, ok := opScripts[op.ID]
	if !ok {
		return pmItem{}, fmt.Errorf("operation %s has no checks in the collection (opScripts)", op.ID)
	}
	path := op.Path
	var pathVars []pmVariable
	if strings.Contains(path, "{id}") {
		v, ok := pathVariables[op.ID]
		if !ok {
			return pmItem{}, fmt.Errorf("operation %s: no variable for {id}", op.ID)
		}
		path = strings.ReplaceAll(path, "{id}", ":id")
		pathVars = append(pathVars, pmVariable{Key: "id", Value: "{{" + v + "}}"})
	}
	u := pmURL{Host: []string{"{{baseUrl}}"}, Path: strings.Split(strings.TrimPrefix(path, "/"), "/"), Variable: pathVars}
	var headers []pmVariable
	for _, p := range op.Params {
		if p["in"] == "header" {
			// An Idempotency-Key per send: a new create each time (resend
			// with the same value to see a replay).
			name, _ := p["name"].(string)
			desc, _ := p["description"].(string)
			headers = append(headers, pmVariable{Key: name, Value: "{{$guid}}", Type: "text", Description: desc})
		}
		if p["in"] != "query" {
			continue
		}
		name, _ := p["name"].(string)
		desc, _ := p["description"].(string)
		// Paging is sent; filters are listed, off, with the document's example.
		enabled := name == "page" || name == "pageSize"
		u.Query = append(u.Query, pmVariable{Key: name, Value: fmt.Sprint(p["example"]), Description: desc, Disabled: !enabled})
	}
	headers = append(headers, pmVariable{Key: "X-Company-Id", Value: "{{companyId}}", Type: "text"})
	u.Raw = rawURL(path, u.Query)
	req := &pmRequest{Method: op.Method, Header: headers, URL: u, Description: strings.TrimSpace(op.Description)}
	if op.Body != "" {
		body := op.Body
		if op.ID == "createClient" {
			body = strings.Replace(body, `"5417000001"`, `"{{newNif}}"`, 1)
		}
		req.Header = append(req.Header, pmVariable{Key: "Content-Type", Value: "application/json", Type: "text"})
		req.Body = &pmBody{Mode: "raw", Raw: body, Options: map[string]any{"raw": map[string]string{"language": "json"}}}
	}
	test := append([]string{
		fmt.Sprintf(`pm.test("status %s", () => pm.response.to.have.status(%s));`, op.Success, op.Success),
		`pm.test("JSON body", () => pm.expect(pm.response.headers.get("Content-Type")).to.eql("application/json"));`,
		`pm.test("RateLimit headers", () => {`,
		`  pm.expect(pm.response.headers.get("RateLimit-Policy")).to.match(/^"(live|test)";q=\d+;w=\d+$/);`,
		`  pm.expect(pm.response.headers.get("RateLimit")).to.match(/^"(live|test)";r=\d+;t=\d+$/);`,
		`});`,
	}, sc.test...)
	it := pmItem{Name: op.Summary, Request: req, Event: []pmEvent{{Listen: "test", Script: pmScript{Type: "text/javascript", Exec: test}}}}
	if len(sc.pre) > 0 {
		it.Event = append(it.Event, pmEvent{Listen: "prerequest", Script: pmScript{Type: "text/javascript", Exec: sc.pre}})
	}
	return it, nil
}

func errorItem(e errorCase) pmItem {
	path := e.path
	u := pmURL{Host: []string{"{{baseUrl}}"}, Path: strings.Split(strings.TrimPrefix(path, "/"), "/")}
	if e.query != "" {
		k, v, _ := strings.Cut(e.query, "=")
		u.Query = []pmVariable{{Key: k, Value: v}}
	}
	u.Raw = rawURL(path, u.Query)
	req := &pmRequest{Method: e.method, URL: u, Header: []pmVariable{}}
	if !e.noCompany {
		req.Header = append(req.Header, pmVariable{Key: "X-Company-Id", Value: "{{companyId}}", Type: "text"})
	}
	if e.noKey {
		req.Auth = &pmAuth{Type: "noauth"}
	}
	if e.body != "" {
		req.Header = append(req.Header, pmVariable{Key: "Content-Type", Value: "application/json", Type: "text"})
		req.Body = &pmBody{Mode: "raw", Raw: e.body, Options: map[string]any{"raw": map[string]string{"language": "json"}}}
	}
	test := []string{
		fmt.Sprintf(`pm.test("status %d", () => pm.response.to.have.status(%d));`, e.status, e.status),
		fmt.Sprintf(`pm.test("code %s", () => pm.expect(pm.response.json().code).to.eql(%q));`, e.code, e.code),
	}
	return pmItem{Name: e.name, Request: req, Event: []pmEvent{{Listen: "test", Script: pmScript{Type: "text/javascript", Exec: test}}}}
}

func rawURL(path string, q []pmVariable) string {
	raw := "{{baseUrl}}" + path
	sep := "?"
	for _, v := range q {
		if !v.Disabled {
			raw += sep + v.Key + "=" + v.Value
			sep = "&"
		}
	}
	return raw
}
