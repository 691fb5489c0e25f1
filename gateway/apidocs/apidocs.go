// Package apidocs is the developer portal's content: the OpenAPI document of the
// public API (openapi.yaml, the single source of truth), what is derived from
// it at start-up (its JSON form, the Postman collection, the errors guide) and
// the explorer page with its vendored, embedded UI. It builds the files and
// says how each is served (File.ServeHTTP: validators, gzip, its cache
// policy and CSP); the gateway's routes serve them, and the admin console's
// files the same way.
package apidocs

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync"
)

// ScalarVersion is the vendored @scalar/api-reference (ui/README.md).
const ScalarVersion = "1.46.4"

// Paths of the portal.
const (
	DocsPath       = "/api/docs"
	ErrorsPath     = "/api/docs/errors"
	YAMLPath       = "/api/openapi.yaml"
	JSONPath       = "/api/openapi.json"
	CollectionPath = "/api/collection.json"
	explorerJSPath = "/api/docs/assets/scalar-api-reference-" + ScalarVersion + ".js"
)

//go:embed openapi.yaml
var documentYAML []byte

//go:embed ui/scalar-api-reference.js
var scalarJS []byte

// YAML is the OpenAPI document as written.
func YAML() []byte { return documentYAML }

// Code is one row of the gateway's error table, for the errors guide.
type Code struct {
	Name   string
	Status int
	Title  string
}

// Config configures the portal.
type Config struct {
	// Codes is the gateway's error table; the errors guide lists them in this
	// order with the explanations the document gives. Nil lists none.
	Codes []Code
}

// File is one thing the portal serves.
type File struct {
	Path        string
	ContentType string
	Body        []byte
	ETag        string // quoted strong validator of Body
	// CacheControl: versioned assets are immutable; the rest is revalidated.
	CacheControl string
	// CSP is the page's Content-Security-Policy (HTML pages only).
	CSP string
	gz  func() []byte // Body gzipped, computed on first use; nil when not worth it
}

// Compressible reports whether the file is also served gzipped.
func (f *File) Compressible() bool { return f.gz != nil }

// Gzipped returns Body compressed with gzip (computed on first use) and its
// ETag; only for a Compressible file.
func (f *File) Gzipped() ([]byte, string) {
	return f.gz(), f.ETag[:len(f.ETag)-1] + `-gz"`
}

// Portal holds the built files.
type Portal struct {
	files []*File
	doc   map[string]any
}

// Files are the portal's files, each at its own path.
func (p *Portal) Files() []*File { return p.files }

// Document is the OpenAPI document decoded as generic JSON values.
func (p *Portal) Document() map[string]any { return p.doc }

// JSON is the OpenAPI document in JSON.
func (p *Portal) JSON() []byte { return p.file(JSONPath).Body }

// Collection is the Postman collection.
func (p *Portal) Collection() []byte { return p.file(CollectionPath).Body }

func (p *Portal) file(path string) *File {
	for _, f := range p.files {
		if f.Path == path {
			return f
		}
	}
	return nil
}

const (
	revalidate = "public, max-age=60, must-revalidate"
	immutable  = "public, max-age=31536000, immutable"
	// The explorer runs only the gateway's own script; the UI injects its
	// styles at run time (hence 'unsafe-inline' for styles only) and sends
	// "try it" requests to the same origin.
	explorerCSP = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; " +
		"img-src 'self' data: blob:; font-src 'self' data:; connect-src 'self'; worker-src 'self' blob:; " +
		"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
	guideCSP = "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)

// New builds the portal's files from the embedded document.
func New(cfg Config) (*Portal, error) {
	js, err := yamlToJSON(documentYAML)
	if err != nil {
		return nil, fmt.Errorf("apidocs: openapi.yaml: %w", err)
	}
	var doc map[string]any
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("apidocs: openapi.json: %w", err)
	}
	coll, err := buildCollection(doc)
	if err != nil {
		return nil, fmt.Errorf("apidocs: collection: %w", err)
	}
	errorsPage, err := renderErrors(doc, cfg.Codes)
	if err != nil {
		return nil, fmt.Errorf("apidocs: errors guide: %w", err)
	}
	explorer, err := renderExplorer(doc)
	if err != nil {
		return nil, fmt.Errorf("apidocs: explorer: %w", err)
	}
	p := &Portal{doc: doc}
	add := func(path, ctype string, body []byte, cache, csp string, compress bool) {
		p.files = append(p.files, NewFile(path, ctype, body, cache, csp, compress))
	}
	add(YAMLPath, "application/yaml; charset=utf-8", documentYAML, revalidate, "", true)
	add(JSONPath, "application/json; charset=utf-8", js, revalidate, "", true)
	add(CollectionPath, "application/json; charset=utf-8", coll, revalidate, "", true)
	add(DocsPath, "text/html; charset=utf-8", explorer, revalidate, explorerCSP, false)
	add(ErrorsPath, "text/html; charset=utf-8", errorsPage, revalidate, guideCSP, true)
	add(explorerJSPath, "text/javascript; charset=utf-8", scalarJS, immutable, "", true)
	return p, nil
}

// Revalidate is the cache policy of a file that may change with the next
// release: kept a minute, then revalidated with its ETag.
const Revalidate = revalidate

// NewFile makes a file to serve: its validator, and, when compress is set,
// its gzipped form on first use.
func NewFile(path, ctype string, body []byte, cacheControl, csp string, compress bool) *File {
	f := &File{Path: path, ContentType: ctype, Body: body, CacheControl: cacheControl, CSP: csp, ETag: etag(body)}
	if compress {
		f.gz = sync.OnceValue(func() []byte { return gzipped(body) })
	}
	return f
}

func etag(b []byte) string {
	sum := sha256.Sum256(b)
	return `"` + hex.EncodeToString(sum[:12]) + `"`
}

func gzipped(b []byte) []byte {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression) // the level is valid
	_, _ = zw.Write(b)
	_ = zw.Close()
	return buf.Bytes()
}
