package web

import (
	"errors"
	"net/http"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/invoicing-ao/gateway/internal/tracing"
	"github.com/invoicing-ao/gateway/invoicing"
)

const tracerName = "github.com/invoicing-ao/gateway/web"

// Telemetry is what a listener reports of each request (Config.Telemetry).
type Telemetry struct {
	// TracerProvider makes the request spans; nil means otel's global one.
	TracerProvider trace.TracerProvider
	// Metrics counts the requests and their latencies; nil counts them in
	// series registered nowhere.
	Metrics *Metrics
	// Usage counts each known caller's requests; nil counts nothing.
	Usage Usage
	// Attributes appends to attrs what the span tells of the caller beyond
	// its company, key and mode (the state of its database's breaker); nil
	// tells nothing more.
	Attributes func(c Caller, attrs []attribute.KeyValue) []attribute.KeyValue
}

// Usage counts each company's requests (usage.Counter).
type Usage interface {
	Add(companyID string, mode invoicing.Mode, status int)
}

// telemetry is a listener's Telemetry, ready.
type telemetry struct {
	Telemetry
	tracer trace.Tracer
}

func newTelemetry(t Telemetry) *telemetry {
	if t.Metrics == nil {
		t.Metrics = NewMetrics(nil)
	}
	return &telemetry{Telemetry: t, tracer: tracing.Tracer(t.TracerProvider, tracerName)}
}

// w3c reads the caller's W3C traceparent. The listener honours it whatever
// the process-wide propagator is, so the API's tracing contract does not
// depend on how the binary was set up.
var w3c propagation.TraceContext

// withTelemetry gives every request, rejections included, a server span (a
// child of the caller's traceparent, if any), its count and latency in the
// metrics (the latency accessLog, inside it, measured), and, once the
// caller is known, its count in the company's usage. The span is named by
// the route pattern and carries ids only: never the key, the query string,
// the body or personal data.
func (c *chain) withTelemetry(next handler) handler {
	t := c.tel
	return func(w http.ResponseWriter, r *http.Request) (Answer, error) {
		ctx := r.Context()
		var span trace.Span
		if !t.tracingOff() || r.Header["Traceparent"] != nil {
			ctx = w3c.Extract(ctx, propagation.HeaderCarrier(r.Header))
			ctx, span = t.tracer.Start(ctx, r.Method, trace.WithSpanKind(trace.SpanKindServer))
			defer span.End() // also when a panic escapes (http.ErrAbortHandler)
			r = r.WithContext(ctx)
		}
		ans, err := next(w, r)
		st := StateOf(ctx)
		t.Metrics.observe(st.routeName(), ans.Status, st.latency) // accessLog's measure
		if st.known && t.Usage != nil {
			t.Usage.Add(st.caller.Company, st.caller.Mode, ans.Status)
		}
		if span != nil && span.IsRecording() {
			t.describeSpan(span, r, st, ans.Status, err)
		}
		return ans, err
	}
}

// tracingOff reports whether spans are no-ops (no exporter configured). The
// middleware then skips the span, and the copy of the request that carries
// it, unless the caller sent a traceparent: a no-op span still carries the
// caller's trace id, which the access log records.
func (t *telemetry) tracingOff() bool {
	tp := t.TracerProvider
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	_, off := tp.(noop.TracerProvider)
	return off
}

// describeSpan names the span by its route and sets the request's facts.
func (t *telemetry) describeSpan(span trace.Span, r *http.Request, st *State, status int, err error) {
	var code string
	if p := (*Error)(nil); errors.As(err, &p) {
		code = p.Code
	}
	attrs := make([]attribute.KeyValue, 0, 10)
	attrs = append(attrs,
		attribute.String("http.request.method", r.Method),
		attribute.Int("http.response.status_code", status),
		attribute.String("gateway.request_id", st.id),
	)
	if st.route != "" {
		span.SetName(st.route)
		attrs = append(attrs, attribute.String("http.route", st.route))
	}
	if code != "" {
		attrs = append(attrs, attribute.String("gateway.problem.code", code))
	}
	if st.known {
		attrs = append(attrs,
			attribute.String("gateway.company_id", st.caller.Company),
			attribute.String("gateway.key_id", st.caller.KeyID),
			attribute.String("gateway.mode", string(st.caller.Mode)))
		if t.Attributes != nil {
			attrs = t.Attributes(st.caller, attrs)
		}
	}
	// A server span is an error for 5xx only: a 4xx is the caller's error,
	// answered correctly.
	if status >= 500 {
		errType := code
		if errType == "" {
			errType = "_OTHER"
		}
		attrs = append(attrs, attribute.String("error.type", errType))
		span.SetStatus(codes.Error, errType)
	}
	span.SetAttributes(attrs...)
}
