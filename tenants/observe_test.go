package tenants

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/invoicing-ao/gateway/invoicing"
)

// TestAllowSpans: a traced decision says allowed or not and whether Redis or
// the local fallback decided; an untraced one leaves no span.
func TestAllowSpans(t *testing.T) {
	t.Parallel()
	rdb, mr := downableMiniredis(t)
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	l := newLimiter(Config{Redis: rdb, Logger: discard(), TracerProvider: tp,
		LiveDefault: Limit{Rate: 0.001, Burst: 1}})
	allow := func() {
		ctx, parent := tp.Tracer("test").Start(context.Background(), "request")
		defer parent.End()
		if _, err := l.Allow(ctx, "acme", invoicing.Live); err != nil {
			t.Fatal(err)
		}
	}
	allow() // redis, allowed
	allow() // redis, rejected
	mr.Close()
	allow() // local: the fallback knows the limit but not Redis's budget, allowed
	allow() // local, rejected
	if _, err := l.Allow(context.Background(), "acme", invoicing.Live); err != nil {
		t.Fatal(err)
	}

	type row struct {
		allowed bool
		source  string
	}
	want := []row{{true, "redis"}, {false, "redis"}, {true, "local"}, {false, "local"}}
	var got []row
	for _, s := range exp.GetSpans() {
		if s.Name != "ratelimit.Allow" {
			continue
		}
		if !s.Parent.IsValid() {
			t.Error("ratelimit.Allow without parent")
		}
		var r row
		for _, a := range s.Attributes {
			switch a.Key {
			case "ratelimit.allowed":
				r.allowed = a.Value.AsBool()
			case "ratelimit.source":
				r.source = a.Value.AsString()
			case "ratelimit.mode":
				if a.Value.AsString() != string(invoicing.Live) {
					t.Errorf("mode %q", a.Value.AsString())
				}
			}
		}
		got = append(got, r)
	}
	if len(got) != len(want) {
		t.Fatalf("spans %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("span %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}
