package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

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
// OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES say otherwise.
const defaultServiceName = "invoicing-gateway"

// setupTelemetry sets tracing up from the process environment, which the
// libraries read themselves: the OTLP exporters the endpoint, protocol
// (otlptracehttp does http/protobuf, the default, and http/json), headers,
// timeout and compression, each also in its _TRACES_ form, which wins; the
// SDK OTEL_TRACES_SAMPLER(_ARG) and OTEL_BSP_*; resource.WithFromEnv
// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES. Done here: tracing is off
// unless an endpoint is set (the exporters would send to localhost), and off
// whatever is set when OTEL_SDK_DISABLED is true or OTEL_TRACES_EXPORTER is
// none; HTTP or gRPC; the description for the start-up log; checkEnv.
//
// Not contrib's autoexport: v0.72.0 refuses http/json, accepts a console
// exporter, and its errors name no variable; it would only replace the
// choice between otlptracegrpc and otlptracehttp below.
func setupTelemetry(ctx context.Context, version string) (*telemetry, error) {
	off := &telemetry{provider: noop.NewTracerProvider(), describe: "off"}
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") {
		return off, nil
	}
	switch exp := getenv("OTEL_TRACES_EXPORTER"); exp {
	case "", "otlp":
	case "none":
		return off, nil
	default:
		return nil, fmt.Errorf("setting OTEL_TRACES_EXPORTER: %q is not supported (otlp or none)", exp)
	}
	endpoint, endpointVar := tracesEnv("OTEL_EXPORTER_OTLP_ENDPOINT")
	if endpoint == "" {
		return off, nil
	}
	if err := checkEnv(); err != nil {
		return nil, err
	}
	u, _ := url.Parse(endpoint) // checked by checkEnv
	protocol, _ := tracesEnv("OTEL_EXPORTER_OTLP_PROTOCOL")
	var exporter sdktrace.SpanExporter
	var err error
	where := u.Host
	if protocol == "grpc" {
		exporter, err = otlptracegrpc.New(ctx)
	} else {
		if protocol == "" {
			protocol = "http/protobuf"
		}
		exporter, err = otlptracehttp.New(ctx)
		// The general endpoint is a base URL to which the exporter adds the
		// signal's path; the traces endpoint is used as it is.
		if endpointVar == "OTEL_EXPORTER_OTLP_ENDPOINT" {
			u.Path = strings.TrimSuffix(u.Path, "/") + "/v1/traces"
		}
		where = u.String()
	}
	if err != nil {
		return nil, fmt.Errorf("tracing: OTLP exporter: %w", err)
	}
	res, err := resource.New(ctx, resource.WithTelemetrySDK(),
		resource.WithAttributes(attribute.String("service.name", defaultServiceName), attribute.String("service.version", version)),
		resource.WithFromEnv()) // last: the variables override the defaults
	if err != nil {
		_ = exporter.Shutdown(ctx)
		return nil, fmt.Errorf("setting OTEL_RESOURCE_ATTRIBUTES or OTEL_SERVICE_NAME: %w", err)
	}
	// No sampler option: the SDK reads OTEL_TRACES_SAMPLER(_ARG).
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exporter), sdktrace.WithResource(res))
	return &telemetry{provider: tp, sdk: tp, describe: "otlp " + protocol + " to " + where}, nil
}

// getenv is a variable without surrounding spaces, as the libraries read it.
func getenv(name string) string { return strings.TrimSpace(os.Getenv(name)) }

// tracesEnv is the _TRACES_ form of an OTEL_EXPORTER_OTLP_ variable when it
// is set, else the general one, and the name of the one used.
func tracesEnv(name string) (string, string) {
	specific := strings.Replace(name, "OTEL_EXPORTER_OTLP_", "OTEL_EXPORTER_OTLP_TRACES_", 1)
	if v := getenv(specific); v != "" {
		return v, specific
	}
	return getenv(name), name
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

// envChecks stop start-up, naming the variable, on values the libraries
// would not refuse. The exporters take an unknown protocol or compression
// for the default, skip an endpoint they cannot parse, a timeout that is not
// a number (and take zero), and a header entry without "=", with a bad key or
// percent-encoding, printing it to stderr with its value (a credential): the
// check runs first, and its error never holds a value. The SDK reports an
// unknown sampler or a bad ratio, then samples everything; WithFromEnv keeps
// a bad percent-encoding as it is. The exporters read both forms of their
// variables, even when the _TRACES_ one wins: both are checked.
var envChecks = []struct {
	name  string
	check func(string) error
}{
	{"OTEL_EXPORTER_OTLP_ENDPOINT", func(v string) error {
		u, err := url.Parse(v)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("%q is not an http:// or https:// URL", v)
		}
		return nil
	}},
	{"OTEL_EXPORTER_OTLP_PROTOCOL", oneOf("http/protobuf", "http/json", "grpc")},
	{"OTEL_EXPORTER_OTLP_HEADERS", func(v string) error { return checkKeyValues(v, true) }},
	{"OTEL_EXPORTER_OTLP_TIMEOUT", func(v string) error {
		if ms, err := strconv.Atoi(v); err != nil || ms <= 0 {
			return fmt.Errorf("%q is not a positive number of milliseconds", v)
		}
		return nil
	}},
	{"OTEL_EXPORTER_OTLP_COMPRESSION", oneOf("gzip", "none")},
	{"OTEL_RESOURCE_ATTRIBUTES", func(v string) error { return checkKeyValues(v, false) }},
	// The SDK lower-cases the sampler's name.
	{"OTEL_TRACES_SAMPLER", func(v string) error {
		return oneOf("always_on", "always_off", "traceidratio", "parentbased_always_on",
			"parentbased_always_off", "parentbased_traceidratio")(strings.ToLower(v))
	}},
	{"OTEL_TRACES_SAMPLER_ARG", func(v string) error { // read by the ratio samplers only
		if !strings.HasSuffix(strings.ToLower(getenv("OTEL_TRACES_SAMPLER")), "traceidratio") {
			return nil
		}
		if r, err := strconv.ParseFloat(v, 64); err != nil || r < 0 || r > 1 {
			return fmt.Errorf("%q is not a ratio from 0 to 1", v)
		}
		return nil
	}},
}

// checkEnv runs envChecks on the variables that are set.
func checkEnv() error {
	for _, c := range envChecks {
		names := []string{c.name}
		if strings.HasPrefix(c.name, "OTEL_EXPORTER_OTLP_") {
			names = append(names, strings.Replace(c.name, "OTEL_EXPORTER_OTLP_", "OTEL_EXPORTER_OTLP_TRACES_", 1))
		}
		for _, name := range names {
			if v := getenv(name); v != "" {
				if err := c.check(v); err != nil {
					return fmt.Errorf("setting %s: %w", name, err)
				}
			}
		}
	}
	return nil
}

func oneOf(values ...string) func(string) error {
	return func(v string) error {
		if slices.Contains(values, v) {
			return nil
		}
		return fmt.Errorf("%q is not supported (%s)", v, strings.Join(values, ", "))
	}
}

// checkKeyValues checks the format of OTEL_*_HEADERS and
// OTEL_RESOURCE_ATTRIBUTES: key=value pairs separated by commas, values
// percent-encoded; a header's key is an HTTP token. An error names the entry
// by its position, and by its key once the key is known good.
func checkKeyValues(s string, header bool) error {
	for i, pair := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(pair, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return fmt.Errorf("entry %d is not key=value", i+1)
		}
		if header && strings.ContainsFunc(k, notTokenChar) {
			return fmt.Errorf("entry %d: the key is not an HTTP header name", i+1)
		}
		if _, err := url.PathUnescape(strings.TrimSpace(v)); err != nil {
			return fmt.Errorf("entry %d (%s): bad percent-encoding", i+1, k)
		}
	}
	return nil
}

// notTokenChar reports whether r may not be in an HTTP header name.
func notTokenChar(r rune) bool {
	return r > unicode.MaxASCII || !(unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("!#$%&'*+-.^_`|~", r))
}
