package events

import (
	"context"
	"net/url"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/invoicing-ao/gateway/invoicing"
)

const tracerName = "github.com/invoicing-ao/gateway/events"

// Traces: a detection page that queues events is a span (events.Detect); a
// delivery attempt is a client span (events.Deliver), the root of its own
// trace, linked to the span of the page that queued its event. That span's
// context is stored with the event (storedEvent), not derived from the
// event's id: OpenTelemetry makes a span's ids itself, so a context derived
// from the id would name a span nobody recorded, whereas the stored one
// names the page as it was recorded (when, which stream, how many events)
// and follows the sampler's decision. It costs a traceparent (55 bytes) per
// event, and an event queued while tracing was off has no link.

// w3c writes and reads the stored span contexts.
var w3c propagation.TraceContext

// storedEvent is an event as the queue keeps it: the event, the W3C
// traceparent of the sampled detection span that queued it ("" for none),
// and the earliest its change can have committed (Unix µs; 0: unknown).
type storedEvent struct {
	*Event
	Cause  string `json:"cause,omitempty"`
	Commit int64  `json:"commit,omitempty"`
}

// causeOf is the traceparent of ctx's span when it is sampled, else "".
func causeOf(ctx context.Context) string {
	if sc := trace.SpanContextFromContext(ctx); !sc.IsValid() || !sc.IsSampled() {
		return ""
	}
	c := propagation.MapCarrier{}
	w3c.Inject(ctx, c)
	return c["traceparent"]
}

// parseCause reads a stored traceparent; invalid for "" or a malformed one.
func parseCause(tp string) trace.SpanContext {
	if tp == "" {
		return trace.SpanContext{}
	}
	return trace.SpanContextFromContext(w3c.Extract(context.Background(), propagation.MapCarrier{"traceparent": tp}))
}

// traceDetect starts the span of a detection page whose read began at
// start and routed n events, and returns the end to call with what
// enqueue did. A page with no event makes no span: detection polls every
// tick, and traces show its work, not its polling.
func (d *detector) traceDetect(ctx context.Context, m invoicing.Mode, loop, stream string, start time.Time, n int) (context.Context, func(added int, moved bool, err error)) {
	if n == 0 {
		return ctx, func(int, bool, error) {}
	}
	ctx, span := d.tracer.Start(ctx, "events.Detect", trace.WithTimestamp(start), trace.WithSpanKind(trace.SpanKindInternal))
	if !span.IsRecording() {
		return ctx, func(int, bool, error) { span.End() }
	}
	span.SetAttributes(attribute.String("gateway.mode", string(m)), attribute.String("events.loop", loop),
		attribute.String("events.stream", stream), attribute.Int("events.routed", n))
	return ctx, func(added int, moved bool, err error) {
		span.SetAttributes(attribute.Int("events.new", added), attribute.Bool("events.watermark_moved", moved))
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, "queueing failed")
		}
		span.End()
	}
}

// traceDeliver starts the span of an attempt at delivering ev to e, linked
// to the detection that queued ev. Its attributes are ids, the type, the
// attempt's number and the receiver's host: never the URL's path or query
// (a receiver's token may be there), a secret or the body.
func (dp *dispatcher) traceDeliver(ctx context.Context, c claim, e *Webhook, ev *Event) (context.Context, trace.Span) {
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient)}
	if ev.cause.IsValid() {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: ev.cause}))
	}
	ctx, span := dp.tracer.Start(ctx, "events.Deliver", opts...)
	if span.IsRecording() {
		attrs := []attribute.KeyValue{
			attribute.String("webhook.event_id", ev.ID), attribute.String("webhook.event_type", string(ev.Type)),
			attribute.String("webhook.endpoint_id", e.ID), attribute.String("gateway.mode", string(ev.Mode)),
			attribute.Int("webhook.attempt", c.attempts+1), attribute.String("http.request.method", "POST"),
		}
		if u, err := url.Parse(e.URL); err == nil {
			attrs = append(attrs, attribute.String("server.address", u.Hostname()))
		}
		span.SetAttributes(attrs...)
	}
	return ctx, span
}

// observeAttempt counts an attempt's outcome and ends its span.
func (dp *dispatcher) observeAttempt(span trace.Span, c claim, ev *Event, a *Attempt, ok bool) {
	outcome := outcomeDelivered
	switch {
	case ok:
	case dp.queue.willRetry(c):
		outcome = outcomeRetried
	default:
		outcome = outcomeFailed
	}
	dp.m.attempted(ev, a, c.attempts, outcome, dp.now())
	if span.IsRecording() {
		span.SetAttributes(attribute.String("webhook.outcome", outcomeNames[outcome]))
		if a.Status > 0 {
			span.SetAttributes(attribute.Int("http.response.status_code", a.Status))
		}
		if !ok {
			span.SetAttributes(attribute.String("error.type", reasonNames[a.reason]))
			span.SetStatus(codes.Error, invoicing.Clip(a.Error))
		}
	}
	span.End()
}
