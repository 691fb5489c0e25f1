package main

import (
	"bufio"
	"compress/gzip"
	"context"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/invoicing-ao/gateway/admin"
	"github.com/invoicing-ao/gateway/authz"
	"github.com/invoicing-ao/gateway/cmd/gateway/internal/config"
	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
)

// otlpReceiver is a real OTLP/HTTP trace endpoint: POST /v1/traces with a
// protobuf ExportTraceServiceRequest, as a collector receives it.
type otlpReceiver struct {
	*httptest.Server
	mu       sync.Mutex
	requests []*coltracepb.ExportTraceServiceRequest
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	rc := &otlpReceiver{}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
			t.Errorf("OTLP receiver: %s %s %s", r.Method, r.URL.Path, r.Header.Get("Content-Type"))
			http.Error(w, "unexpected", http.StatusBadRequest)
			return
		}
		var body io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			body = zr
		}
		b, err := io.ReadAll(body)
		req := &coltracepb.ExportTraceServiceRequest{}
		if err == nil {
			err = proto.Unmarshal(b, req)
		}
		if err != nil {
			t.Errorf("OTLP receiver: %v", err)
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		rc.mu.Lock()
		rc.requests = append(rc.requests, req)
		rc.mu.Unlock()
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	}))
	t.Cleanup(rc.Close)
	return rc
}

// span is a received span, flattened for assertions.
type span struct {
	Name            string
	TraceID, SpanID string
	Parent          string
	Kind            tracepb.Span_SpanKind
	Attrs           map[string]string
	Resource        map[string]string
	Error           bool
}

func flatten(kvs []*commonpb.KeyValue) map[string]string {
	m := map[string]string{}
	for _, kv := range kvs {
		switch v := kv.GetValue().GetValue().(type) {
		case *commonpb.AnyValue_StringValue:
			m[kv.Key] = v.StringValue
		case *commonpb.AnyValue_IntValue:
			m[kv.Key] = strconv.FormatInt(v.IntValue, 10)
		case *commonpb.AnyValue_BoolValue:
			m[kv.Key] = strconv.FormatBool(v.BoolValue)
		case *commonpb.AnyValue_DoubleValue:
			m[kv.Key] = strconv.FormatFloat(v.DoubleValue, 'g', -1, 64)
		default:
			m[kv.Key] = kv.GetValue().String()
		}
	}
	return m
}

func (rc *otlpReceiver) spans() []span {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var out []span
	for _, req := range rc.requests {
		for _, rs := range req.ResourceSpans {
			res := flatten(rs.GetResource().GetAttributes())
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					out = append(out, span{Name: s.Name, TraceID: hex.EncodeToString(s.TraceId), SpanID: hex.EncodeToString(s.SpanId),
						Parent: hex.EncodeToString(s.ParentSpanId), Kind: s.Kind, Attrs: flatten(s.Attributes), Resource: res,
						Error: s.GetStatus().GetCode() == tracepb.Status_STATUS_CODE_ERROR})
				}
			}
		}
	}
	return out
}

// rawText is every string in every received request, attribute keys and
// values, resource and events included: where a leak would show.
func (rc *otlpReceiver) rawText() string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var b strings.Builder
	for _, req := range rc.requests {
		raw, _ := proto.Marshal(req)
		b.Write(raw)
	}
	return b.String()
}

// observedGateway is a gateway built by the binary's own wiring, tracing
// through the binary's env-driven setup to an OTLP receiver.
type observedGateway struct {
	env        func(string) string
	d          *deps
	tel        *telemetry
	pub, admin *httptest.Server
	logs       *testenv.SyncBuffer
	token      string
	cfg        config.Config
}

// jsonLines are the log lines written to logs so far that parse as JSON.
func jsonLines(logs *testenv.SyncBuffer) []map[string]any {
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(logs.String()))
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) == nil {
			out = append(out, m)
		}
	}
	return out
}

func startObserved(t *testing.T, extra map[string]string) *observedGateway {
	t.Helper()
	ctx := context.Background()
	base := cliEnv(t)
	env := func(k string) string {
		if v, ok := extra[k]; ok {
			return v
		}
		return base(k)
	}
	g := &observedGateway{env: env, logs: &testenv.SyncBuffer{}, token: extra["GATEWAY_ADMIN_TOKEN"]}
	cfg, err := config.Load("../../configs/gateway.yaml", env, config.NeedAll)
	if err != nil {
		t.Fatal(err)
	}
	g.cfg = cfg
	otelEnv := map[string]string{}
	for k, v := range extra {
		if strings.HasPrefix(k, "OTEL_") {
			otelEnv[k] = v
		}
	}
	setOTelEnv(t, otelEnv) // the OpenTelemetry libraries read the process environment
	g.tel, err = setupTelemetry(ctx, "test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.tel.shutdown(context.Background()) })
	opt, err := redis.ParseURL(cfg.RedisURL)
	if err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.NewJSONHandler(g.logs, nil))
	g.d, err = connectWith(ctx, cfg, logger, redis.NewClient(opt), withTracerProvider(g.tel.provider))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.d.Close)
	g.pub = httptest.NewServer(g.d.server.Handler())
	g.admin = httptest.NewServer(g.d.adminHandler())
	t.Cleanup(g.pub.Close)
	t.Cleanup(g.admin.Close)
	return g
}

func (g *observedGateway) key(t *testing.T, company string, mode invoicing.Mode) string {
	t.Helper()
	sc, _ := authz.ParseScopes("invoices:read,clients:read,clients:write")
	v, err := g.d.admin.Keys.CreateKey(context.Background(), "test@local", admin.KeySpec{CompanyID: company, Mode: mode, Scopes: sc, Name: "observability test"})
	if err != nil {
		t.Fatal(err)
	}
	return v.Key
}

// call sends one request and returns its status and X-Request-Id.
func call(t *testing.T, method, url, key, company, body string, header map[string]string) (int, string, []byte) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	r, _ := http.NewRequest(method, url, rd)
	if key != "" {
		r.Header.Set("Authorization", "Bearer "+key)
	}
	if company != "" {
		r.Header.Set("X-Company-Id", company)
	}
	if body != "" {
		r.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		r.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header.Get("X-Request-Id"), b
}
