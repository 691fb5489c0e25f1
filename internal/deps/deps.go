// Package deps is a temporary holder that keeps modules in go.mod while the
// packages that use them are being written. Delete when unused.
package deps

import (
	_ "github.com/getkin/kin-openapi/openapi3filter"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/sony/gobreaker/v2"
	_ "github.com/tsenart/vegeta/v12/lib"
	_ "go.opentelemetry.io/otel"
	_ "go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	_ "go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	_ "go.opentelemetry.io/otel/sdk/trace"
	_ "go.opentelemetry.io/otel/sdk/trace/tracetest"
	_ "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	_ "k8s.io/api/apps/v1"
	_ "sigs.k8s.io/kustomize/api/krusty"
	_ "sigs.k8s.io/kustomize/kyaml/filesys"
	_ "sigs.k8s.io/yaml"
)
