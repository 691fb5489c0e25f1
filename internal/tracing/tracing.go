// Package tracing picks the tracer each component of the gateway makes its
// spans with: the one of the provider it was configured with, or of
// OpenTelemetry's global provider when none was, so that components built
// without a provider (tests, tools) still follow whatever the process set up.
package tracing

import (
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"
)

// Tracer is tp's tracer for the instrumentation scope (a package path), or
// the global provider's when tp is nil.
func Tracer(tp trace.TracerProvider, scope string) trace.Tracer {
	if tp == nil {
		return otel.Tracer(scope)
	}
	return tp.Tracer(scope)
}
