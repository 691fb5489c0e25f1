// Package deps is a temporary holder that keeps modules in go.mod while the
// packages that use them are being written. Delete when unused.
package deps

import (
	_ "github.com/getkin/kin-openapi/openapi3filter"
	_ "github.com/sony/gobreaker/v2"
	_ "github.com/tsenart/vegeta/v12/lib"
	_ "k8s.io/api/apps/v1"
	_ "sigs.k8s.io/kustomize/api/krusty"
	_ "sigs.k8s.io/kustomize/kyaml/filesys"
	_ "sigs.k8s.io/yaml"
)
