package web

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// With tracing off the middleware makes no span and no request copy, but a
// caller's traceparent still reaches the access log, as a no-op span would
// carry it; with tracing on every request gets its span.
func TestTelemetryOffSkipsSpans(t *testing.T) {
	const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	rec := tracetest.NewSpanRecorder()
	sdk := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = sdk.Shutdown(t.Context()) })
	for _, tc := range []struct {
		name        string
		tp          trace.TracerProvider
		traceparent bool
		sameRequest bool   // the handler sees the request withTelemetry got
		traceID     string // in the access log
		spans       int
	}{
		{"off", noop.NewTracerProvider(), false, true, "", 0},
		{"off, caller traced", noop.NewTracerProvider(), true, false, "4bf92f3577b34da6a3ce929d0e0e4736", 0},
		{"on", sdk, false, false, "any", 1},
		{"on, caller traced", sdk, true, false, "4bf92f3577b34da6a3ce929d0e0e4736", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(rec.Ended())
			var logs bytes.Buffer
			c := newChain(Config{Telemetry: &Telemetry{TracerProvider: tc.tp}, Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
			var outer, seen *http.Request
			inner := func(w http.ResponseWriter, r *http.Request) (Answer, error) {
				seen = r
				StateOf(r.Context()).route = "GET /x"
				return Answer{Status: http.StatusNoContent}, nil
			}
			chain := c.withTelemetry(c.accessLog(c.writeAnswers(inner)))
			h := c.withRequestID(func(w http.ResponseWriter, r *http.Request) (Answer, error) {
				outer = r
				return chain(w, r)
			})
			req := httptest.NewRequest(http.MethodGet, "/x", nil)
			if tc.traceparent {
				req.Header.Set("traceparent", parent)
			}
			_, _ = h(httptest.NewRecorder(), req)
			if got := seen == outer; got != tc.sameRequest {
				t.Errorf("handler got the same request: %v, want %v", got, tc.sameRequest)
			}
			var line struct{ TraceID string }
			if err := json.Unmarshal(logs.Bytes(), &line); err != nil {
				t.Fatalf("access log %q: %v", logs.String(), err)
			}
			if tc.traceID == "any" && line.TraceID == "" || tc.traceID != "any" && line.TraceID != tc.traceID {
				t.Errorf("access log traceId %q, want %q", line.TraceID, tc.traceID)
			}
			if got := len(rec.Ended()) - before; got != tc.spans {
				t.Errorf("%d spans ended, want %d", got, tc.spans)
			}
		})
	}
}
