package events

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
)

func attrsOf(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value
	}
	return m
}

// A real change, detected and delivered to a real receiver (which fails the
// first attempt): the page that found it is a span, and each attempt is a
// client span of its own trace linked to that span, with the event's type,
// the attempt's number and the answer's status; nothing of the URL but its
// host, no secret and no body.
func TestDeliverySpansLinkToTheirDetection(t *testing.T) {
	t.Parallel()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	e := newEnv(t)
	recv := newFlaky(t)
	cfg := e.config()
	cfg.TracerProvider, cfg.Schedule = tp, []time.Duration{50 * time.Millisecond}
	s := e.service(cfg)
	ep, secret, err := s.CreateWebhook(context.Background(), NewWebhook{CompanyID: e.company, Mode: invoicing.Test,
		URL: recv.srv.URL + "/hook?token=s3cr3t-token", Types: []string{string(ClientCreated)}})
	if err != nil {
		t.Fatal(err)
	}
	e.run(s)
	e.insertClient(cli1, "Cliente Confidencial")

	detect, deliver := waitSpans(t, rec, 2)
	if len(detect) != 1 || len(deliver) != 2 {
		t.Fatalf("%d detection and %d delivery spans, want 1 and 2 (pages without events make none)", len(detect), len(deliver))
	}
	d := detect[0]
	if a := attrsOf(d); a["gateway.mode"].AsString() != "TEST" || a["events.loop"].AsString() != "changes" || a["events.stream"].AsString() != "clients" ||
		a["events.routed"].AsInt64() != 1 || a["events.new"].AsInt64() != 1 {
		t.Errorf("detection span attributes %v", d.Attributes())
	}
	reqs := recv.requests()
	if len(reqs) != 2 {
		t.Fatalf("the receiver got %d requests", len(reqs))
	}
	eventID := reqs[0].header.Get("webhook-id")
	for i, sp := range deliver {
		if sp.SpanKind() != trace.SpanKindClient || sp.Parent().IsValid() {
			t.Errorf("attempt %d: kind %v, parent %v; want a client span, root of its trace", i+1, sp.SpanKind(), sp.Parent())
		}
		if l := sp.Links(); len(l) != 1 || l[0].SpanContext.TraceID() != d.SpanContext().TraceID() || l[0].SpanContext.SpanID() != d.SpanContext().SpanID() {
			t.Errorf("attempt %d: links %+v, want the detection span %v", i+1, l, d.SpanContext())
		}
		a := attrsOf(sp)
		wantStatus, wantCode := int64(500), codes.Error
		if i == 1 {
			wantStatus, wantCode = 204, codes.Unset
		}
		if a["webhook.event_type"].AsString() != string(ClientCreated) || a["webhook.attempt"].AsInt64() != int64(i+1) ||
			a["http.response.status_code"].AsInt64() != wantStatus || a["webhook.event_id"].AsString() != eventID ||
			a["webhook.endpoint_id"].AsString() != ep.ID || a["server.address"].AsString() != "127.0.0.1" || sp.Status().Code != wantCode {
			t.Errorf("attempt %d: attributes %v, status %v", i+1, sp.Attributes(), sp.Status())
		}
		if i == 0 && (a["webhook.outcome"].AsString() != "retried" || a["error.type"].AsString() != "status") {
			t.Errorf("attempt 1: outcome %q, error.type %q; want retried, status", a["webhook.outcome"].AsString(), a["error.type"].AsString())
		}
		for _, kv := range sp.Attributes() {
			v := kv.Value.String()
			for _, leak := range []string{"s3cr3t", "token", secret, strings.TrimPrefix(secret, "whsec_"), "Confidencial", "/hook"} {
				if strings.Contains(v, leak) {
					t.Errorf("attempt %d: attribute %s = %q holds %q", i+1, kv.Key, v, leak)
				}
			}
		}
	}
	// The stored span context stays in the queue: the receiver's body is the
	// webhook's payload only.
	for _, r := range reqs {
		if strings.Contains(string(r.body), "cause") || strings.Contains(string(r.body), d.SpanContext().TraceID().String()) {
			t.Errorf("body %s holds the detection's span context", r.body)
		}
	}
}

// waitSpans waits for n delivery spans, and answers them with the spans of
// the changes loop's detection (the sweep reads the change again).
func waitSpans(t *testing.T, rec *tracetest.SpanRecorder, n int) (detect, deliver []sdktrace.ReadOnlySpan) {
	t.Helper()
	testenv.Eventually(t, "the delivery spans", func() error {
		detect, deliver = nil, nil
		for _, sp := range rec.Ended() {
			switch sp.Name() {
			case "events.Detect":
				if attrsOf(sp)["events.loop"].AsString() == "changes" {
					detect = append(detect, sp)
				}
			case "events.Deliver":
				deliver = append(deliver, sp)
			}
		}
		return atLeast(len(deliver), n, "delivery spans")
	})
	return detect, deliver
}

// A stored traceparent reads back as the span context it was made of, and
// none is stored for a context that is not sampled.
func TestCauseRoundTrip(t *testing.T) {
	t.Parallel()
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	sampled := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled})
	c := causeOf(trace.ContextWithSpanContext(context.Background(), sampled))
	if c != "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01" {
		t.Fatalf("causeOf = %q", c)
	}
	if got := parseCause(c); got.TraceID() != tid || got.SpanID() != sid || !got.IsSampled() {
		t.Errorf("parseCause(%q) = %+v", c, got)
	}
	if c := causeOf(trace.ContextWithSpanContext(context.Background(), sampled.WithTraceFlags(0))); c != "" {
		t.Errorf("an unsampled context stored as %q", c)
	}
	for _, bad := range []string{"", "garbage", "00-00000000000000000000000000000000-00f067aa0ba902b7-01"} {
		if parseCause(bad).IsValid() {
			t.Errorf("parseCause(%q) is valid", bad)
		}
	}
}
