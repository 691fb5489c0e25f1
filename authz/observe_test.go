package authz

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
)

// TestVerifyOutcomes walks a key through every cache outcome and checks both
// Stats and the span each traced Verify leaves, on both Redis backends.
func TestVerifyOutcomes(t *testing.T) {
	t.Parallel()
	testenv.RedisBackends(t, func(t *testing.T, rdb *redis.Client, prefix string) {
		exp := tracetest.NewInMemoryExporter()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
		c := newClock()
		p := attachProbe(t, rdb)
		k := newRing(t, rdb, prefix, c, func(cfg *Config) { cfg.TracerProvider = tp })
		key, secret := mustCreate(t, k, companyA, invoicing.Live, "invoices:read")
		unknown := "igw_live_" + strings.Repeat("q", secretBody)

		// Each Verify runs under a recording parent, as under the server span.
		verify := func(secret string) {
			ctx, parent := tp.Tracer("test").Start(context.Background(), "request")
			_, _ = k.Verify(ctx, secret)
			parent.End()
		}
		verify(secret)               // miss
		verify(secret)               // hit
		verify(unknown)              // miss: Redis does not know it
		verify(unknown)              // negative
		verify("igw_live_malformed") // skipped: no lookup
		c.Add(2 * time.Second)       // past CacheTTL
		p.down.Store(true)
		verify(secret) // stale
		p.down.Store(false)

		want := CacheStats{Hits: 1, Misses: 2, Negative: 1, Stale: 1}
		if got := k.Stats(); got != want {
			t.Fatalf("Stats = %+v, want %+v", got, want)
		}
		type row struct{ cache, result, keyID string }
		var got []row
		for _, s := range exp.GetSpans() {
			if s.Name != "authz.Verify" {
				continue
			}
			var r row
			for _, a := range s.Attributes {
				v := a.Value.String()
				if strings.Contains(v, secret[len(secret)-20:]) || strings.Contains(v, unknown[len(unknown)-20:]) {
					t.Fatalf("attribute %s carries a secret", a.Key)
				}
				switch a.Key {
				case "authz.cache":
					r.cache = v
				case "authz.result":
					r.result = v
				case "authz.key_id":
					r.keyID = v
				}
			}
			if !s.Parent.IsValid() {
				t.Errorf("authz.Verify span without parent")
			}
			got = append(got, r)
		}
		wantRows := []row{
			{"miss", "valid", key.ID}, {"hit", "valid", key.ID}, {"miss", "invalid", ""},
			{"negative", "invalid", ""}, {"", "invalid", ""}, {"stale", "valid", key.ID},
		}
		if len(got) != len(wantRows) {
			t.Fatalf("spans = %+v, want %+v", got, wantRows)
		}
		for i := range got {
			if got[i] != wantRows[i] {
				t.Errorf("span %d = %+v, want %+v", i, got[i], wantRows[i])
			}
		}
	})
}

// TestVerifyUntracedMakesNoSpan: without a recording parent, Verify starts
// no span even on a recording provider (the hot path stays allocation-free).
func TestVerifyUntracedMakesNoSpan(t *testing.T) {
	t.Parallel()
	rdb, _ := testenv.Miniredis(t)
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	k := newRing(t, rdb, "untraced:", nil, func(cfg *Config) { cfg.TracerProvider = tp })
	_, secret := mustCreate(t, k, companyA, invoicing.Live, "invoices:read")
	for range 3 {
		if _, err := k.Verify(context.Background(), secret); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(exp.GetSpans()); n != 0 {
		t.Fatalf("%d spans without a parent span", n)
	}
	if s := k.Stats(); s.Hits != 2 || s.Misses != 1 {
		t.Fatalf("Stats = %+v", s)
	}
}

// BenchmarkVerifyWarmTraced is BenchmarkVerifyWarmSerial under a recording
// parent span: the cost of the authz.Verify child span when tracing is on.
func BenchmarkVerifyWarmTraced(b *testing.B) {
	rdb, _ := testenv.Miniredis(b)
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sdktrace.NewBatchSpanProcessor(tracetest.NewNoopExporter())))
	b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	k := newRing(b, rdb, "bench:", nil, func(cfg *Config) { cfg.TracerProvider = tp })
	_, secret := mustCreate(b, k, companyA, invoicing.Live, "invoices:read,clients:read")
	ctx, parent := tp.Tracer("bench").Start(context.Background(), "request")
	defer parent.End()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := k.Verify(ctx, secret); err != nil {
			b.Fatal(err)
		}
	}
}
