package main

import (
	"context"
	"encoding/binary"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

func TestTelemetrySettings(t *testing.T) {
	for _, c := range []struct {
		name     string
		env      map[string]string
		describe string // "" when an error is wanted
		errHas   string
	}{
		{"nothing set: off", nil, "off", ""},
		{"disabled wins", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SDK_DISABLED": "true"}, "off", ""},
		{"exporter none", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_EXPORTER": "none"}, "off", ""},
		{"http default, signal path added", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, "otlp http/protobuf to http://c:4318/v1/traces", ""},
		{"traces endpoint used as is", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:4318", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://b/custom"}, "otlp http/protobuf to https://b/custom", ""},
		{"json", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318/", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, "otlp http/json to http://c:4318/v1/traces", ""},
		{"grpc", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, "otlp grpc to c:4317", ""},
		{"traces protocol wins", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc"}, "otlp grpc to c:4317", ""},
		{"bad protocol", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_EXPORTER_OTLP_PROTOCOL": "thrift"}, "", "OTEL_EXPORTER_OTLP_PROTOCOL"},
		{"endpoint without scheme", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "c:4317"}, "", "OTEL_EXPORTER_OTLP_ENDPOINT"},
		{"bad exporter", map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, "", "OTEL_TRACES_EXPORTER"},
		{"bad sampler", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_TRACES_SAMPLER": "sometimes"}, "", "OTEL_TRACES_SAMPLER"},
		{"bad ratio", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "2"}, "", "OTEL_TRACES_SAMPLER_ARG"},
		{"bad timeout", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT": "soon"}, "", "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT"},
		{"bad compression", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_EXPORTER_OTLP_COMPRESSION": "zstd"}, "", "OTEL_EXPORTER_OTLP_COMPRESSION"},
		{"bad headers, value not echoed", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_EXPORTER_OTLP_HEADERS": "authorization=Bearer%zzsecret"}, "", "OTEL_EXPORTER_OTLP_HEADERS"},
		// The exporter reads the general variable too, and would print a bad entry.
		{"bad general headers under good traces ones", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_EXPORTER_OTLP_HEADERS": "secret", "OTEL_EXPORTER_OTLP_TRACES_HEADERS": "a=b"}, "", "OTEL_EXPORTER_OTLP_HEADERS"},
		{"bad header key", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_EXPORTER_OTLP_TRACES_HEADERS": "x tenant=secret"}, "", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"},
		{"bad resource attributes", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_RESOURCE_ATTRIBUTES": "team=a%zz"}, "", "OTEL_RESOURCE_ATTRIBUTES"},
	} {
		t.Run(c.name, func(t *testing.T) {
			setOTelEnv(t, c.env)
			tel, err := setupTelemetry(context.Background(), "test")
			if c.describe == "" {
				if err == nil || !strings.Contains(err.Error(), c.errHas) || strings.Contains(err.Error(), "secret") {
					t.Fatalf("err = %v, want one naming %s", err, c.errHas)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer tel.shutdown(context.Background())
			if tel.describe != c.describe {
				t.Errorf("describe = %q, want %q", tel.describe, c.describe)
			}
			if (tel.sdk == nil) != (c.describe == "off") {
				t.Errorf("sdk provider %v for %q", tel.sdk, c.describe)
			}
		})
	}
}

// otelVars are the variables setupTelemetry and the libraries it uses read.
var otelVars = []string{"OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER", "OTEL_SERVICE_NAME",
	"OTEL_RESOURCE_ATTRIBUTES", "OTEL_TRACES_SAMPLER", "OTEL_TRACES_SAMPLER_ARG"}

func init() {
	for _, v := range []string{"ENDPOINT", "PROTOCOL", "HEADERS", "TIMEOUT", "COMPRESSION"} {
		otelVars = append(otelVars, "OTEL_EXPORTER_OTLP_"+v, "OTEL_EXPORTER_OTLP_TRACES_"+v)
	}
}

// setOTelEnv makes m the OpenTelemetry environment of the process for the
// test (the libraries read os.Getenv): the other variables are emptied,
// which they take as unset. Not for parallel tests.
func setOTelEnv(t *testing.T, m map[string]string) {
	t.Helper()
	for _, k := range otelVars {
		t.Setenv(k, m[k])
	}
	for k, v := range m {
		t.Setenv(k, v)
	}
}

// TestSamplers: the SDK samples as OTEL_TRACES_SAMPLER(_ARG) say, by
// default parentbased_always_on. Each sampler is told by its decisions: for
// new traces, under a remote parent sampled or not, and for a ratio at the
// trace ids on either side of its bound.
func TestSamplers(t *testing.T) {
	under := func(low uint64, sampled bool) trace.SpanContext {
		tid := trace.TraceID{0: 1}
		binary.BigEndian.PutUint64(tid[8:], low)
		var flags trace.TraceFlags
		if sampled {
			flags = trace.FlagsSampled
		}
		return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: trace.SpanID{0: 1}, TraceFlags: flags, Remote: true})
	}
	for _, c := range []struct {
		name, arg     string
		ratio         float64 // of new traces sampled
		followsParent bool
	}{
		{"", "", 1, true},
		{"always_off", "", 0, false},
		{"traceidratio", "0.25", 0.25, false},
		{"parentbased_traceidratio", "0.5", 0.5, true},
	} {
		setOTelEnv(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1",
			"OTEL_TRACES_SAMPLER": c.name, "OTEL_TRACES_SAMPLER_ARG": c.arg})
		tel, err := setupTelemetry(context.Background(), "test")
		if err != nil {
			t.Fatal(err)
		}
		// The spans are not ended: nothing is exported.
		sampled := func(parent trace.SpanContext) bool {
			ctx := trace.ContextWithRemoteSpanContext(context.Background(), parent)
			_, s := tel.provider.Tracer("test").Start(ctx, "s")
			return s.SpanContext().IsSampled()
		}
		n := 0
		for range 2000 {
			if sampled(trace.SpanContext{}) {
				n++
			}
		}
		if got := float64(n) / 2000; math.Abs(got-c.ratio) > 0.1 {
			t.Errorf("%s %s: %v of new traces sampled, want %v", c.name, c.arg, got, c.ratio)
		}
		// A ratio sampler decides by the trace id alone: at 0.25, those whose
		// last 8 bytes are below 2^62 (a quarter of them).
		if c.followsParent && (!sampled(under(1<<63, true)) || sampled(under(0, false))) {
			t.Errorf("%s %s: a remote parent's decision not followed", c.name, c.arg)
		}
		if !c.followsParent && (sampled(under(0, false)) != (c.ratio > 0) ||
			sampled(under(1<<62-1, true)) != (c.ratio >= 0.25) || sampled(under(1<<62, true)) != (c.ratio > 0.25)) {
			t.Errorf("%s %s: not sampled by the trace id at ratio %v", c.name, c.arg, c.ratio)
		}
		_ = tel.shutdown(context.Background())
	}
}

// grpcReceiver is a real OTLP/gRPC trace service.
type grpcReceiver struct {
	coltracepb.UnimplementedTraceServiceServer
	mu      sync.Mutex
	names   []string
	headers []string
}

func (g *grpcReceiver) Export(ctx context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	md, _ := metadata.FromIncomingContext(ctx)
	g.headers = append(g.headers, md.Get("x-tenant")...)
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				g.names = append(g.names, s.Name)
			}
		}
	}
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

// TestTracesOverGRPC: OTEL_EXPORTER_OTLP_PROTOCOL=grpc sends spans, with the
// configured headers, to a real gRPC OTLP service.
func TestTracesOverGRPC(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	rc := &grpcReceiver{}
	coltracepb.RegisterTraceServiceServer(srv, rc)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)

	setOTelEnv(t, map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT": "http://" + ln.Addr().String(),
		"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
		"OTEL_EXPORTER_OTLP_HEADERS":  "x-tenant=platform%20team",
	})
	tel, err := setupTelemetry(context.Background(), "test")
	if err != nil {
		t.Fatal(err)
	}
	_, s := tel.provider.Tracer("test").Start(context.Background(), "over grpc")
	s.End()
	if err := tel.shutdown(context.Background()); err != nil { // flushes
		t.Fatal(err)
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.names) != 1 || rc.names[0] != "over grpc" || len(rc.headers) != 1 || rc.headers[0] != "platform team" {
		t.Fatalf("received %v with headers %v", rc.names, rc.headers)
	}
}

// TestTracesOverHTTPJSON: with http/json, otlptracehttp sends JSON to the
// traces endpoint as it is, with the default service.name and the other
// OTEL_RESOURCE_ATTRIBUTES, percent-decoded.
func TestTracesOverHTTPJSON(t *testing.T) {
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, r.URL.Path+" "+r.Header.Get("Content-Type")+" "+string(b))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte("{}"))
	}))
	t.Cleanup(srv.Close)
	setOTelEnv(t, map[string]string{
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": srv.URL + "/custom",
		"OTEL_EXPORTER_OTLP_PROTOCOL":        "http/json",
		"OTEL_RESOURCE_ATTRIBUTES":           "deployment.environment=test%20env",
	})
	tel, err := setupTelemetry(context.Background(), "test")
	if err != nil {
		t.Fatal(err)
	}
	_, s := tel.provider.Tracer("test").Start(context.Background(), "over json")
	s.End()
	if err := tel.shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 || !strings.HasPrefix(got[0], "/custom application/json {") {
		t.Fatalf("received %q", got)
	}
	for _, want := range []string{`"over json"`, `"invoicing-gateway"`, `"test env"`} {
		if !strings.Contains(got[0], want) {
			t.Errorf("no %s in %s", want, got[0])
		}
	}
}
