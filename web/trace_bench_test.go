package web

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/invoicing-ao/gateway/invoicing"
)

// benchTelemetry measures what withTelemetry (span, metrics, usage) and the
// access log add to a request whose handler does nothing: the hot-path cost
// of observability, tracing off (the binary's no-op provider) or on (every
// request sampled, spans batched to an exporter that drops them).
func benchTelemetry(b *testing.B, tp trace.TracerProvider, traceparent bool) {
	benchChain(b, tp, traceparent, true)
}

func benchChain(b *testing.B, tp trace.TracerProvider, traceparent, telemetry bool) {
	c := newChain(Config{Telemetry: &Telemetry{TracerProvider: tp}, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	inner := func(w http.ResponseWriter, r *http.Request) (Answer, error) {
		st := StateOf(r.Context())
		st.route = "GET /api/v1/v1/clients"
		st.Identify(Caller{KeyID: "key_x", Company: "0a5e7c1e-0000-4000-8000-00000000000a", Mode: invoicing.Live})
		return Answer{}, nil
	}
	h := c.accessLog(c.writeAnswers(inner))
	if telemetry {
		h = c.withTelemetry(h)
	}
	h = c.withRequestID(h)
	req := httptest.NewRequest(http.MethodGet, "/api/v1/v1/clients", nil)
	if traceparent {
		req.Header.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	}
	b.ReportAllocs()
	for b.Loop() {
		_, _ = h(discardWriter{}, req)
	}
}

type discardWriter struct{}

func (discardWriter) Header() http.Header         { return http.Header{} }
func (discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (discardWriter) WriteHeader(int)             {}

// BenchmarkWithoutTelemetry is the baseline: request id and access log only.
func BenchmarkWithoutTelemetry(b *testing.B) { benchChain(b, nil, false, false) }

func BenchmarkTelemetryOff(b *testing.B) { benchTelemetry(b, noop.NewTracerProvider(), false) }

func BenchmarkTelemetryOffWithTraceparent(b *testing.B) {
	benchTelemetry(b, noop.NewTracerProvider(), true)
}

func BenchmarkTelemetryOn(b *testing.B) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
	b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	benchTelemetry(b, tp, false)
}
