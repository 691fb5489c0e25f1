package client

// The generated half of the package: oapi-codegen, pinned, with its default
// settings (types and client), from the gateway's OpenAPI document as it is.
// TestGeneratedCodeIsCurrent fails when the document changed and this was not
// run again.
//go:generate go run github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen@v2.8.2 -generate types,client -package client -o client.gen.go ../gateway/apidocs/openapi.yaml
