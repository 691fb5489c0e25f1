package backend_test

import (
	"context"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/invoicing-ao/gateway/backend"
	"github.com/invoicing-ao/gateway/invoicing"
)

// TestStatementSpans: each statement run under a recording span is a child
// span with the engine, the parameterized text and the rows it returned;
// no value sent by a caller appears in any attribute.
func TestStatementSpans(t *testing.T) {
	t.Parallel()
	for name, mk := range map[string]newDB{"postgres": postgresDB(false), "sqlite": sqliteDB} {
		t.Run(name, func(t *testing.T) { testStatementSpans(t, name, mk(t)) })
	}
}

// testStatementSpans lists and creates clients under a request's span on
// the engine (name) at url, then checks the spans and the pool's figures.
func testStatementSpans(t *testing.T, name, url string) {
	load(t, url, liveFixtures())
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	s, err := backend.Open(context.Background(), backend.Config{URL: url, Now: func() time.Time { return fixedNow }, TracerProvider: tp})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	exp.Reset() // Open's ping ran without a parent: no span expected anyway

	ctx, parent := tp.Tracer("test").Start(context.Background(), "request")
	search := "Sonangol"
	page, err := s.ListClients(ctx, coA, invoicing.ClientFilter{Search: search, Page: 1, PageSize: 20})
	if err != nil || len(page.Data) != 1 {
		t.Fatalf("list: %v %+v", err, page)
	}
	nif, email, phone := "5417009876", "pessoa@example.ao", "+244923000111"
	if _, err := s.CreateClient(ctx, coW, invoicing.NewClient{Name: "Pessoa Privada", NIF: &nif, Email: &email, Phone: &phone}); err != nil {
		t.Fatal(err)
	}
	parent.End()
	// Untraced work leaves no span.
	if _, err := s.Company(context.Background(), coA); err != nil {
		t.Fatal(err)
	}

	system := map[string]string{"postgres": "postgresql", "sqlite": "sqlite"}[name]
	secrets := []string{search, strings.ToLower(search), nif, email, phone, "Pessoa"}
	checkStatementSpans(t, exp.GetSpans(), parent.SpanContext().SpanID(), system, secrets)

	ps := s.PoolStats()
	if ps.MaxConns != 10 || ps.TotalConns < 1 || ps.InUseConns != 0 || ps.IdleConns < 1 {
		t.Errorf("PoolStats = %+v", ps)
	}
	if name == "postgres" && ps.Acquires < 3 {
		t.Errorf("PoolStats.Acquires = %d after several queries", ps.Acquires)
	}
}

// checkStatementSpans checks the statements' spans: children of the
// request (parent), of the engine (system), with parameterized text and
// row counts, and none holding a value sent by the caller (secrets).
func checkStatementSpans(t *testing.T, spans tracetest.SpanStubs, parent trace.SpanID, system string, secrets []string) {
	t.Helper()
	var selects, inserts int
	for _, sp := range spans {
		if sp.Name == "request" {
			continue
		}
		if sp.Parent.SpanID() != parent {
			t.Errorf("span %q is not a child of the request", sp.Name)
		}
		attrs := map[string]string{}
		for _, a := range sp.Attributes {
			v := a.Value.String()
			for _, secret := range secrets {
				if strings.Contains(v, secret) {
					t.Errorf("span %q attribute %s holds %q", sp.Name, a.Key, secret)
				}
			}
			attrs[string(a.Key)] = v
		}
		if attrs["db.system"] != system || attrs["db.breaker.state"] != "closed" || !strings.Contains(attrs["db.query.text"], "?") && !strings.Contains(attrs["db.query.text"], "$1") {
			t.Errorf("span %q attributes %v", sp.Name, attrs)
		}
		switch sp.Name {
		case "SELECT customers":
			selects++
			if attrs["db.operation.name"] != "SELECT" || attrs["db.collection.name"] != "customers" || attrs["db.response.returned_rows"] == "" {
				t.Errorf("select span attributes %v", attrs)
			}
		case "INSERT customers":
			inserts++
			if attrs["db.response.affected_rows"] != "1" {
				t.Errorf("insert span attributes %v", attrs)
			}
		}
	}
	// The list is a count and a page (both on customers) unless the
	// total was known; the create is one INSERT.
	if selects < 1 || inserts != 1 {
		t.Errorf("spans: %d SELECT customers, %d INSERT customers; all: %v", selects, inserts, spanNames(spans))
	}
	found := false
	for _, sp := range spans {
		for _, a := range sp.Attributes {
			if a.Key == "db.response.returned_rows" && a.Value.AsInt64() == 1 && strings.Contains(sp.Name, "customers") {
				found = true
			}
		}
	}
	if !found {
		t.Error("no span reports the one client row returned")
	}
}

func spanNames(spans tracetest.SpanStubs) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name)
	}
	return out
}
