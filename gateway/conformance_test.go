package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"

	"github.com/invoicing-ao/gateway/internal/apitest"
	"github.com/invoicing-ao/gateway/invoicing"
)

// Schema-driven conformance: for each operation of the document, requests
// drawn at random from its own parameter and body schemas (valueGen), and as
// many made invalid on purpose (mutations), sent to a real gateway. Every
// answer must be one the document gives for that operation (status, headers,
// body: do validates it), never a 5xx; a valid request must succeed (or be
// an unknown id, a NIF taken); an invalid one must be refused with the
// status its mutation names. The generator is held to the document too: a
// request it calls valid must pass kin-openapi's request validation, and a
// mutation the schemas alone describe must fail it.
//
// Seeded: CONFORMANCE_SEED=n reproduces a run (the default is fixed).
const conformancePerOperation = 220 // 60 % valid

func TestSchemaConformance(t *testing.T) {
	t.Parallel()
	seed := uint64(14)
	if s := os.Getenv("CONFORMANCE_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("CONFORMANCE_SEED: %v", err)
		}
		seed = n
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("reproduce with CONFORMANCE_SEED=%d", seed)
		}
	})
	doc, err := apitest.Doc()
	if err != nil {
		t.Fatal(err)
	}
	w := newWorld(t)
	in := w.start()
	k := in.key(t, coA, invoicing.Live, allScopes)
	known := map[string][]string{
		"getInvoice": idsOf(t, in.pub.URL, "/api/v1/v1/invoices?pageSize=30", k.Key),
		"getClient":  idsOf(t, in.pub.URL, "/api/v1/v1/clients?pageSize=30", k.Key),
	}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			t.Run(op.OperationID, func(t *testing.T) {
				t.Parallel()
				c := conformance{t: t, doc: doc, g: valueGen{rand.New(rand.NewPCG(seed, uint64(len(op.OperationID))))},
					op: op, method: method, path: path, known: known[op.OperationID], keys: map[string]bool{}}
				muts := c.mutations()
				statuses := map[string]int{}
				defer func() { t.Logf("%d requests: %v", conformancePerOperation, statuses) }()
				for i := range conformancePerOperation {
					p := c.valid()
					if i%5 >= 3 {
						m := muts[(i/5)%len(muts)]
						p.name, p.valid, p.inSchema, p.want = m.name, false, m.inSchema, m.want
						m.apply(c.g, &p)
					}
					statuses[fmt.Sprintf("%s %d", map[bool]string{true: "valid", false: "invalid"}[p.valid], c.check(p, in.pub.URL, k.Key))]++
				}
			})
		}
	}
}

func idsOf(t *testing.T, base, path, key string) []string {
	var page struct{ Data []struct{ ID string } }
	if err := json.Unmarshal(do(t, base, req{Path: path, Key: key, Company: coA}).Body, &page); err != nil || len(page.Data) == 0 {
		t.Fatalf("%s: %v", path, err)
	}
	var ids []string
	for _, d := range page.Data {
		ids = append(ids, d.ID)
	}
	return ids
}

// probe is one request of the run and what it must get.
type probe struct {
	name              string // "valid" or the mutation's
	query             [][2]string
	id                string // the path's id, unescaped
	header            map[string]string
	follow            bool // first ask, then follow the answer: its nextCursor, or its ETag
	body, contentType string
	noKey, noCompany  bool
	valid, inSchema   bool
	want              []int
}

type conformance struct {
	t            *testing.T
	doc          *openapi3.T
	g            valueGen
	op           *openapi3.Operation
	method, path string
	known        []string
	keys         map[string]bool // Idempotency-Keys sent
}

// valid draws a request from the operation's schemas.
func (c *conformance) valid() probe {
	p := probe{name: "valid", valid: true, want: []int{200}, header: map[string]string{}}
	for _, ref := range c.op.Parameters {
		c.param(&p, ref.Value)
	}
	// The rules no schema can state, which the document's descriptions do.
	if queryValue(p.query, "cursor") != "" {
		p.follow, p.query = true, withoutQuery(withoutQuery(p.query, "cursor"), "page")
	}
	from, to := queryValue(p.query, "from"), queryValue(p.query, "to")
	if from != "" && to != "" && from > to {
		setQuery(&p.query, "from", to)
		setQuery(&p.query, "to", from)
	}
	// The events feed's range: until after since.
	if since, until := queryValue(p.query, "since"), queryValue(p.query, "until"); since != "" && until != "" {
		s, err1 := time.Parse(time.RFC3339Nano, since)
		u, err2 := time.Parse(time.RFC3339Nano, until)
		if err1 == nil && err2 == nil && !s.Before(u) {
			p.query = withoutQuery(p.query, "until")
		}
	}
	if p.follow {
		p.want = append(p.want, 304) // a followed page with its ETag: the events feed tags its pages
	}
	if c.op.RequestBody != nil {
		schema := c.op.RequestBody.Value.Content.Get("application/json").Schema.Value
		for {
			v := c.g.value(schema).(map[string]any)
			if nif, _ := v["nif"].(string); strings.ReplaceAll(nif, " ", "") == "999999999" {
				continue // the anonymous consumer's placeholder is refused
			}
			b, err := json.Marshal(v)
			if err != nil {
				c.t.Fatal(err)
			}
			p.body, p.contentType = string(b), "application/json"
			break
		}
		p.want = []int{201, 409}
	}
	return p
}

// param adds a value drawn for prm to p, or leaves the parameter out.
func (c *conformance) param(p *probe, prm *openapi3.Parameter) {
	s := prm.Schema.Value
	switch {
	case prm.In == "path":
		p.id = c.g.value(s).(string)
		if len(c.known) > 0 && c.g.r.IntN(2) == 0 {
			p.id = c.known[c.g.r.IntN(len(c.known))]
			p.follow = c.g.r.IntN(3) == 0 // a conditional GET with its real ETag
			if c.g.r.IntN(3) == 0 {
				p.id = strings.ToUpper(p.id) // any letter case
			}
		}
		p.want = []int{200, 304, 404}
	case prm.In == "header" && c.g.r.IntN(4) > 0:
		if prm.Name == "Idempotency-Key" {
			p.header[prm.Name] = c.freshKey(s)
		} else {
			p.header[prm.Name] = c.g.headerText(s)
		}
	case prm.In == "query" && prm.Name == "cursor" && c.g.r.IntN(4) == 0:
		// Only the API's own cursors are cursors: valid() follows a
		// nextCursor instead of drawing one.
		p.query = append(p.query, [2]string{prm.Name, "follow"})
	case prm.In == "query" && prm.Name != "cursor" && c.g.r.IntN(2) == 0:
		p.query = append(p.query, [2]string{prm.Name, queryText(c.g.value(s))})
	}
}

// freshKey draws an Idempotency-Key not sent before (one per create, as the
// document asks; an old one would be a replay or 422) and not blank once
// HTTP trims it.
func (c *conformance) freshKey(s *openapi3.Schema) string {
	for {
		k := c.g.value(s).(string)
		if t := strings.TrimSpace(k); t != "" && !c.keys[t] {
			c.keys[t] = true
			return k
		}
	}
}

// check sends p and holds the answer to the document and to p's promise.
func (c *conformance) check(p probe, base, key string) (status int) {
	t := c.t
	t.Helper()
	q := p.request(c.method, c.path, key)
	if p.follow {
		q = c.followed(t, q, base)
	}
	r := do(t, base, q) // validated against the document
	what := fmt.Sprintf("%s (%s) %s %.300s", p.name, map[bool]string{true: "valid", false: "invalid"}[p.valid], q.Path, q.Body)
	if r.Status >= 500 || !slices.Contains(p.want, r.Status) {
		t.Errorf("%s: status %d, want one of %v: %.300s", what, r.Status, p.want, r.Body)
	}
	err := requestValid(c.doc, q)
	if p.valid && err != nil {
		t.Errorf("%s: the generator drew a request the document refuses: %v", what, err)
	}
	if !p.valid && p.inSchema && err == nil {
		t.Errorf("%s: the document's schemas accept what the gateway must refuse", what)
	}
	return r.Status
}

// followed asks q once and returns q made to follow the answer: with its
// nextCursor (a list's next page), or with its ETag as If-None-Match (304).
func (c *conformance) followed(t *testing.T, q req, base string) req {
	first := do(t, base, q)
	var page struct{ NextCursor *string }
	if json.Unmarshal(first.Body, &page) == nil && page.NextCursor != nil {
		sep := "?"
		if strings.Contains(q.Path, "?") {
			sep = "&"
		}
		q.Path += sep + "cursor=" + url.QueryEscape(*page.NextCursor)
	}
	if etag := first.Header.Get("ETag"); etag != "" {
		q.Header["If-None-Match"] = etag
	}
	return q
}

func (p probe) request(method, path, key string) req {
	q := req{Method: method, Path: strings.Replace(path, "{id}", url.PathEscape(p.id), 1), Key: key, Company: coA,
		Body: p.body, ContentType: p.contentType, Header: map[string]string{}}
	for k, v := range p.header {
		q.Header[k] = v
	}
	if len(p.query) > 0 {
		parts := make([]string, len(p.query))
		for i, kv := range p.query {
			parts[i] = url.QueryEscape(kv[0]) + "=" + url.QueryEscape(kv[1])
		}
		q.Path += "?" + strings.Join(parts, "&")
	}
	if p.noKey {
		q.Key = ""
	}
	if p.noCompany {
		q.Company = ""
	}
	return q
}

// requestValid is kin-openapi's verdict on a request (authentication aside:
// the security schemes are the gateway's to check).
func requestValid(doc *openapi3.T, q req) error {
	hr, err := http.NewRequest(q.Method, "http://gateway"+q.Path, strings.NewReader(q.Body))
	if err != nil {
		return err
	}
	if q.ContentType != "" {
		hr.Header.Set("Content-Type", q.ContentType)
	}
	for k, v := range q.Header {
		hr.Header.Set(k, v)
	}
	route, params := apitest.FindOperation(doc, q.Method, hr.URL.EscapedPath())
	if route == nil {
		return errors.New("no operation of the document")
	}
	return openapi3filter.ValidateRequest(context.Background(), &openapi3filter.RequestValidationInput{
		Request: hr, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, MultiError: true},
	})
}

func queryText(v any) string {
	if f, ok := v.(float64); ok {
		return strconv.FormatInt(int64(f), 10)
	}
	return fmt.Sprint(v)
}

func queryValue(q [][2]string, name string) string {
	for _, kv := range q {
		if kv[0] == name {
			return kv[1]
		}
	}
	return ""
}

func withoutQuery(q [][2]string, name string) [][2]string {
	var out [][2]string
	for _, kv := range q {
		if kv[0] != name {
			out = append(out, kv)
		}
	}
	return out
}

// setQuery sets name's value, adding it when absent.
func setQuery(q *[][2]string, name, value string) {
	for i := range *q {
		if (*q)[i][0] == name {
			(*q)[i][1] = value
			return
		}
	}
	*q = append(*q, [2]string{name, value})
}
