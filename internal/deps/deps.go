// Package deps is a temporary holder that keeps modules in go.mod while the
// packages that use them are being written. Delete when unused.
package deps

import (
	_ "github.com/getkin/kin-openapi/openapi3filter"
	_ "github.com/sony/gobreaker/v2"
	_ "github.com/tsenart/vegeta/v12/lib"
)
