package main

import (
	"strings"
	"testing"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/invoicing-ao/gateway/backend/gendata"
)

// The spans of TestObservability's requests.

func checkSpans(t *testing.T, rc *otlpReceiver, secrets ...string) {
	tree := newSpanTree(t, rc)
	created := tree.find(t, "POST /api/v1/v1/clients", "201")
	if ins := tree.children(created)["INSERT customers"]; len(ins) != 1 || ins[0].Attrs["db.response.affected_rows"] != "1" ||
		ins[0].Attrs["db.system"] != "postgresql" || ins[0].Kind != tracepb.Span_SPAN_KIND_CLIENT {
		t.Errorf("create: INSERT span %+v", ins)
	}
	checkListSpan(t, tree, tree.find(t, "GET /api/v1/v1/clients", "200"))
	checkRefusedSpans(t, tree)
	raw := rc.rawText()
	for _, s := range append(secrets, "Observada", "923111222", "search=") {
		if strings.Contains(raw, s) {
			t.Errorf("exported spans contain %q", s)
		}
	}
}

// spanTree is the spans exported, the server spans (one per request) among
// them.
type spanTree struct {
	spans, servers []span
}

// newSpanTree reads the spans the receiver got; every one carries the
// gateway's resource, and there is a server span per request.
func newSpanTree(t *testing.T, rc *otlpReceiver) spanTree {
	t.Helper()
	tree := spanTree{spans: rc.spans()}
	for _, s := range tree.spans {
		if s.Kind == tracepb.Span_SPAN_KIND_SERVER {
			tree.servers = append(tree.servers, s)
		}
		if s.Resource["service.name"] != "gw-observed" || s.Resource["service.version"] != "test" {
			t.Errorf("span %q resource %v", s.Name, s.Resource)
		}
	}
	if len(tree.servers) != 6 {
		t.Fatalf("%d server spans, want 6 (one per request): %v", len(tree.servers), names(tree.spans))
	}
	return tree
}

// children are the spans whose parent is p, by name.
func (tree spanTree) children(p span) map[string][]span {
	m := map[string][]span{}
	for _, s := range tree.spans {
		if s.Parent == p.SpanID && s.TraceID == p.TraceID {
			m[s.Name] = append(m[s.Name], s)
		}
	}
	return m
}

// find is the server span of name that answered status.
func (tree spanTree) find(t *testing.T, name, status string) span {
	t.Helper()
	for _, s := range tree.servers {
		if s.Name == name && s.Attrs["http.response.status_code"] == status {
			return s
		}
	}
	t.Fatalf("no server span %q with status %s among %v", name, status, names(tree.servers))
	return span{}
}

// checkListSpan checks the list request's span: the caller's traceparent
// honoured, its attributes, and its children (the key's verification, the
// limit's decision, the statements).
func checkListSpan(t *testing.T, tree spanTree, listed span) {
	t.Helper()
	if listed.TraceID != clientTraceID || listed.Parent != clientSpanID {
		t.Errorf("traceparent not honoured: trace %s parent %s", listed.TraceID, listed.Parent)
	}
	for k, want := range map[string]string{
		"http.request.method": "GET", "http.route": "GET /api/v1/v1/clients", "gateway.company_id": gendata.DemoCompanyA,
		"gateway.mode": "LIVE", "db.breaker.state": "closed",
	} {
		if listed.Attrs[k] != want {
			t.Errorf("list span %s = %q, want %q", k, listed.Attrs[k], want)
		}
	}
	if listed.Attrs["gateway.key_id"] == "" || listed.Attrs["gateway.request_id"] == "" {
		t.Errorf("list span lacks ids: %v", listed.Attrs)
	}
	kids := tree.children(listed)
	if v := kids["authz.Verify"]; len(v) != 1 || v[0].Attrs["authz.result"] != "valid" || v[0].Attrs["authz.cache"] == "" {
		t.Errorf("list: authz.Verify %+v", v)
	}
	if a := kids["ratelimit.Allow"]; len(a) != 1 || a[0].Attrs["ratelimit.allowed"] != "true" || a[0].Attrs["ratelimit.source"] != "redis" {
		t.Errorf("list: ratelimit.Allow %+v", a)
	}
	sel := kids["SELECT customers"]
	rowsSeen := false
	for _, s := range sel {
		if s.Attrs["db.system"] != "postgresql" || !strings.Contains(s.Attrs["db.query.text"], "$1") {
			t.Errorf("list: statement span %v", s.Attrs)
		}
		rowsSeen = rowsSeen || s.Attrs["db.response.returned_rows"] == "1"
	}
	if len(sel) == 0 || !rowsSeen {
		t.Errorf("list: statement spans %+v", sel)
	}
}

// checkRefusedSpans checks the spans of the refused requests: a wrong key
// (401), a limit (429, the database not asked), no route (404).
func checkRefusedSpans(t *testing.T, tree spanTree) {
	t.Helper()
	refused := tree.find(t, "GET /api/v1/v1/clients", "401")
	if refused.Attrs["gateway.problem.code"] != "invalid_api_key" || refused.Attrs["gateway.company_id"] != "" || refused.Error {
		t.Errorf("401 span %v", refused.Attrs)
	}
	if v := tree.children(refused)["authz.Verify"]; len(v) != 1 || v[0].Attrs["authz.cache"] != "miss" || v[0].Attrs["authz.result"] != "invalid" {
		t.Errorf("401: authz.Verify %+v", v)
	}
	limited := tree.find(t, "GET /api/v1/v1/clients", "429")
	if limited.Attrs["gateway.problem.code"] != "rate_limit_test" || limited.Attrs["gateway.mode"] != "TEST" {
		t.Errorf("429 span %v", limited.Attrs)
	}
	if a := tree.children(limited)["ratelimit.Allow"]; len(a) != 1 || a[0].Attrs["ratelimit.allowed"] != "false" || a[0].Attrs["ratelimit.source"] != "redis" {
		t.Errorf("429: ratelimit.Allow %+v", a)
	}
	if len(tree.children(limited)["SELECT customers"]) != 0 {
		t.Error("429: the database was asked")
	}
	unrouted := tree.find(t, "GET", "404")
	if unrouted.Attrs["gateway.problem.code"] != "route_not_found" || unrouted.Attrs["http.route"] != "" {
		t.Errorf("404 span %v", unrouted.Attrs)
	}
}

func names(spans []span) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name)
	}
	return out
}

// checkLog: the access line of a traced request names its trace and span.
