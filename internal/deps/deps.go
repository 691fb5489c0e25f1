// Package deps is a temporary holder that keeps the chosen modules in go.mod
// while the packages that use them are being written. Delete when unused.
package deps

import (
	_ "github.com/alicebob/miniredis/v2"
	_ "github.com/jackc/pgx/v5/pgxpool"
	_ "github.com/jackc/pgx/v5/stdlib"
	_ "github.com/julienschmidt/httprouter"
	_ "github.com/redis/go-redis/v9"
	_ "github.com/sony/gobreaker/v2"
	_ "go.opentelemetry.io/otel"
	_ "go.opentelemetry.io/otel/sdk/trace"
	_ "go.opentelemetry.io/otel/sdk/trace/tracetest"
	_ "golang.org/x/time/rate"
	_ "gopkg.in/yaml.v3"
	_ "modernc.org/sqlite"
)
