package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// telemetry is the process's tracing: spans exported over OTLP as the
// standard OTEL_* variables say, or nothing at all.
type telemetry struct {
	// provider makes the spans: a no-op one when tracing is off, so that
	// nothing is recorded and nothing allocated for spans.
	provider trace.TracerProvider
	sdk      *sdktrace.TracerProvider // nil when off
	// describe says where spans go, for the start-up log (never headers).
	describe string
}

// defaultServiceName is the service.name of the spans unless
// OTEL_SERVICE_NAME says otherwise.
const defaultServiceName = "invoicing-gateway"

// setupTelemetry reads the OpenTelemetry environment through env (the
// process environment in the binary, a map in tests). Tracing is off unless
// an OTLP endpoint is set, and off whatever is set when OTEL_SDK_DISABLED is
// true or OTEL_TRACES_EXPORTER is none. Supported: the OTLP endpoint,
// protocol (http/protobuf, the default; http/json; grpc), headers, timeout
// and compression, each also in its _TRACES_ form, which wins;
// OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES, OTEL_TRACES_SAMPLER and
// OTEL_TRACES_SAMPLER_ARG. The batch processor's OTEL_BSP_* are the SDK's.
// A value it cannot use stops start-up with a message naming it.
func setupTelemetry(ctx context.Context, env func(string) string, version string) (*telemetry, error) {
	off := &telemetry{provider: noop.NewTracerProvider(), describe: "off"}
	if strings.EqualFold(strings.TrimSpace(env("OTEL_SDK_DISABLED")), "true") {
		return off, nil
	}
	switch exp := strings.TrimSpace(env("OTEL_TRACES_EXPORTER")); exp {
	case "", "otlp":
	case "none":
		return off, nil
	default:
		return nil, fmt.Errorf("setting OTEL_TRACES_EXPORTER: %q is not supported (otlp or none)", exp)
	}
	// The signal-specific variable wins over the general one.
	get := func(name string) (string, string) {
		specific := strings.Replace(name, "OTEL_EXPORTER_OTLP_", "OTEL_EXPORTER_OTLP_TRACES_", 1)
		if v := strings.TrimSpace(env(specific)); v != "" {
			return v, specific
		}
		return strings.TrimSpace(env(name)), name
	}
	endpoint, endpointVar := get("OTEL_EXPORTER_OTLP_ENDPOINT")
	if endpoint == "" {
		return off, nil
	}
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("setting %s: %q is not an http:// or https:// URL", endpointVar, endpoint)
	}
	protocol, protocolVar := get("OTEL_EXPORTER_OTLP_PROTOCOL")
	if protocol == "" {
		protocol = "http/protobuf"
	}
	headers, err := parseKeyValues(get("OTEL_EXPORTER_OTLP_HEADERS"))
	if err != nil {
		return nil, err
	}
	var timeout time.Duration
	if v, name := get("OTEL_EXPORTER_OTLP_TIMEOUT"); v != "" {
		ms, err := strconv.Atoi(v)
		if err != nil || ms <= 0 {
			return nil, fmt.Errorf("setting %s: %q is not a positive number of milliseconds", name, v)
		}
		timeout = time.Duration(ms) * time.Millisecond
	}
	gzip := false
	switch v, name := get("OTEL_EXPORTER_OTLP_COMPRESSION"); v {
	case "", "none":
	case "gzip":
		gzip = true
	default:
		return nil, fmt.Errorf("setting %s: %q is not gzip or none", name, v)
	}

	var exporter sdktrace.SpanExporter
	switch protocol {
	case "http/protobuf", "http/json":
		// The general endpoint is a base URL to which the signal's path is
		// added; the traces endpoint is used as it is.
		if endpointVar == "OTEL_EXPORTER_OTLP_ENDPOINT" {
			u.Path = strings.TrimSuffix(u.Path, "/") + "/v1/traces"
		}
		opts := []otlptracehttp.Option{otlptracehttp.WithEndpointURL(u.String()), otlptracehttp.WithHeaders(headers)}
		if protocol == "http/json" {
			opts = append(opts, otlptracehttp.WithEncoding(otlptracehttp.EncodingJSON))
		}
		if timeout > 0 {
			opts = append(opts, otlptracehttp.WithTimeout(timeout))
		}
		if gzip {
			opts = append(opts, otlptracehttp.WithCompression(otlptracehttp.GzipCompression))
		}
		exporter, err = otlptracehttp.New(ctx, opts...)
	case "grpc":
		opts := []otlptracegrpc.Option{otlptracegrpc.WithEndpointURL(u.String()), otlptracegrpc.WithHeaders(headers)}
		if timeout > 0 {
			opts = append(opts, otlptracegrpc.WithTimeout(timeout))
		}
		if gzip {
			opts = append(opts, otlptracegrpc.WithCompressor("gzip"))
		}
		exporter, err = otlptracegrpc.New(ctx, opts...)
	default:
		return nil, fmt.Errorf("setting %s: %q is not http/protobuf, http/json or grpc", protocolVar, protocol)
	}
	if err != nil {
		return nil, fmt.Errorf("tracing: OTLP exporter: %w", err)
	}

	sampler, err := parseSampler(env("OTEL_TRACES_SAMPLER"), env("OTEL_TRACES_SAMPLER_ARG"))
	if err != nil {
		_ = exporter.Shutdown(ctx)
		return nil, err
	}
	res, err := newResource(ctx, env, version)
	if err != nil {
		_ = exporter.Shutdown(ctx)
		return nil, err
	}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exporter),
		sdktrace.WithSampler(sampler),
		sdktrace.WithResource(res),
	)
	where := u.Host
	if strings.HasPrefix(protocol, "http") {
		where = u.String()
	}
	return &telemetry{provider: tp, sdk: tp, describe: "otlp " + protocol + " to " + where}, nil
}

// install makes t the process-wide provider, with W3C trace context as the
// propagator, and sends the SDK's own errors (an unreachable collector) to
// the log instead of stderr.
func (t *telemetry) install(logger *slog.Logger) {
	otel.SetTracerProvider(t.provider)
	otel.SetTextMapPropagator(propagation.TraceContext{})
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		logger.Warn("tracing: export failed", "error", err)
	}))
}

// shutdown sends the spans still buffered, within ctx.
func (t *telemetry) shutdown(ctx context.Context) error {
	if t.sdk == nil {
		return nil
	}
	return t.sdk.Shutdown(ctx)
}

// flush sends the spans still buffered at exit, waiting at most 5 seconds
// for the collector.
func (t *telemetry) flush(logger *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := t.shutdown(ctx); err != nil {
		logger.Warn("tracing: spans lost at exit", "error", err)
	}
}

// parseKeyValues parses the OTEL_*_HEADERS and OTEL_RESOURCE_ATTRIBUTES
// format: key=value pairs separated by commas, values percent-encoded. The
// error names the variable, never the values (headers hold credentials).
func parseKeyValues(s, name string) (map[string]string, error) {
	out := map[string]string{}
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	for i, pair := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(pair, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("setting %s: entry %d is not key=value", name, i+1)
		}
		dv, err := url.PathUnescape(strings.TrimSpace(v))
		if err != nil {
			return nil, fmt.Errorf("setting %s: entry %d (%s): bad percent-encoding", name, i+1, k)
		}
		out[k] = dv
	}
	return out, nil
}

// parseSampler maps OTEL_TRACES_SAMPLER(_ARG) to a sampler; the default is
// parentbased_always_on, as the specification says: a caller's sampling
// decision is followed, new traces are all sampled.
func parseSampler(name, arg string) (sdktrace.Sampler, error) {
	name, arg = strings.TrimSpace(name), strings.TrimSpace(arg)
	ratio := 1.0
	if arg != "" && strings.HasSuffix(name, "traceidratio") {
		r, err := strconv.ParseFloat(arg, 64)
		if err != nil || r < 0 || r > 1 {
			return nil, fmt.Errorf("setting OTEL_TRACES_SAMPLER_ARG: %q is not a ratio from 0 to 1", arg)
		}
		ratio = r
	}
	switch name {
	case "", "parentbased_always_on":
		return sdktrace.ParentBased(sdktrace.AlwaysSample()), nil
	case "parentbased_always_off":
		return sdktrace.ParentBased(sdktrace.NeverSample()), nil
	case "parentbased_traceidratio":
		return sdktrace.ParentBased(sdktrace.TraceIDRatioBased(ratio)), nil
	case "always_on":
		return sdktrace.AlwaysSample(), nil
	case "always_off":
		return sdktrace.NeverSample(), nil
	case "traceidratio":
		return sdktrace.TraceIDRatioBased(ratio), nil
	}
	return nil, fmt.Errorf("setting OTEL_TRACES_SAMPLER: %q is not supported (always_on, always_off, traceidratio or their parentbased_ forms)", name)
}

// newResource describes the process: service.name (OTEL_SERVICE_NAME, else
// OTEL_RESOURCE_ATTRIBUTES' service.name, else invoicing-gateway),
// service.version and the other OTEL_RESOURCE_ATTRIBUTES.
func newResource(ctx context.Context, env func(string) string, version string) (*resource.Resource, error) {
	kv, err := parseKeyValues(env("OTEL_RESOURCE_ATTRIBUTES"), "OTEL_RESOURCE_ATTRIBUTES")
	if err != nil {
		return nil, err
	}
	if kv["service.name"] == "" {
		kv["service.name"] = defaultServiceName
	}
	if v := strings.TrimSpace(env("OTEL_SERVICE_NAME")); v != "" {
		kv["service.name"] = v
	}
	if kv["service.version"] == "" {
		kv["service.version"] = version
	}
	attrs := make([]attribute.KeyValue, 0, len(kv))
	for k, v := range kv {
		attrs = append(attrs, attribute.String(k, v))
	}
	res, err := resource.New(ctx, resource.WithTelemetrySDK(), resource.WithAttributes(attrs...))
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("tracing: resource: %w", err)
	}
	return res, nil
}

// wireOption adjusts what connectWith builds.
type wireOption func(*wireOptions)

type wireOptions struct {
	tp trace.TracerProvider // nil: otel's global provider
}

// withTracerProvider makes every component trace with tp instead of the
// global provider (tests run several gateways with their own receivers).
func withTracerProvider(tp trace.TracerProvider) wireOption {
	return func(o *wireOptions) { o.tp = tp }
}

func wireOptionsOf(opts []wireOption) wireOptions {
	var o wireOptions
	for _, f := range opts {
		f(&o)
	}
	return o
}
