package gateway

import (
	"errors"
	"net/http"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

const tracerName = "github.com/invoicing-ao/gateway/gateway"

// w3c reads the caller's W3C traceparent. The gateway honours it whatever
// the process-wide propagator is, so the API's tracing contract does not
// depend on how the binary was set up.
var w3c propagation.TraceContext

// withTelemetry gives every request on the public listener, rejections
// included, a server span (a child of the caller's traceparent, if any), its
// count and latency in the metrics (the latency accessLog, inside it,
// measured), and, once the caller is known, its count in the company's
// usage. The span is named by the route pattern and carries ids only: never
// the key, the query string, the body or personal data.
func (s *Server) withTelemetry(next handler) handler {
	return func(w http.ResponseWriter, r *http.Request) (answer, error) {
		ctx := r.Context()
		var span trace.Span
		if !s.tracingOff() || r.Header["Traceparent"] != nil {
			ctx = w3c.Extract(ctx, propagation.HeaderCarrier(r.Header))
			ctx, span = s.tracer.Start(ctx, r.Method, trace.WithSpanKind(trace.SpanKindServer))
			defer span.End() // also when a panic escapes (http.ErrAbortHandler)
			r = r.WithContext(ctx)
		}
		ans, err := next(w, r)
		st := stateFrom(ctx)
		s.metrics.observe(st.routeName(), ans.status, st.latency) // accessLog's measure
		if st.Authed && s.usage != nil {
			s.usage.Add(st.Key.CompanyID, st.Key.Mode, ans.status)
		}
		if span != nil && span.IsRecording() {
			s.describeSpan(span, r, st, ans.status, err)
		}
		return ans, err
	}
}

// tracingOff reports whether spans are no-ops (no exporter configured). The
// middleware then skips the span, and the copy of the request that carries
// it, unless the caller sent a traceparent: a no-op span still carries the
// caller's trace id, which the access log records.
func (s *Server) tracingOff() bool {
	tp := s.tp
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	_, off := tp.(noop.TracerProvider)
	return off
}

// describeSpan names the span by its route and sets the request's facts.
func (s *Server) describeSpan(span trace.Span, r *http.Request, st *reqState, status int, err error) {
	var code string
	if p := (*Error)(nil); errors.As(err, &p) {
		code = p.Code
	}
	attrs := make([]attribute.KeyValue, 0, 10)
	attrs = append(attrs,
		attribute.String("http.request.method", r.Method),
		attribute.Int("http.response.status_code", status),
		attribute.String("gateway.request_id", st.ID),
	)
	if st.Route != "" {
		span.SetName(st.Route)
		attrs = append(attrs, attribute.String("http.route", st.Route))
	}
	if code != "" {
		attrs = append(attrs, attribute.String("gateway.problem.code", code))
	}
	if st.Authed {
		attrs = append(attrs,
			attribute.String("gateway.company_id", st.Key.CompanyID),
			attribute.String("gateway.key_id", st.Key.ID),
			attribute.String("gateway.mode", string(st.Key.Mode)))
		if b, ok := s.store(st.Key.Mode).(breakerStater); ok {
			attrs = append(attrs, attribute.String("db.breaker.state", b.BreakerState()))
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
