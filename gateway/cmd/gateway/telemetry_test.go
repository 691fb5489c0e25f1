package main

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"

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
	} {
		t.Run(c.name, func(t *testing.T) {
			tel, err := setupTelemetry(context.Background(), envOf(c.env), "test")
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

func TestSamplers(t *testing.T) {
	for _, c := range []struct{ name, arg, want string }{
		{"", "", "ParentBased{root:AlwaysOnSampler"},
		{"always_off", "", "AlwaysOffSampler"},
		{"traceidratio", "0.25", "TraceIDRatioBased{0.25}"},
		{"parentbased_traceidratio", "0.5", "ParentBased{root:TraceIDRatioBased{0.5}"},
	} {
		s, err := parseSampler(c.name, c.arg)
		if err != nil || !strings.HasPrefix(s.Description(), c.want) {
			t.Errorf("%s %s: %v %v, want %s", c.name, c.arg, s, err, c.want)
		}
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

	tel, err := setupTelemetry(context.Background(), envOf(map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT": "http://" + ln.Addr().String(),
		"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
		"OTEL_EXPORTER_OTLP_HEADERS":  "x-tenant=platform%20team",
	}), "test")
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
