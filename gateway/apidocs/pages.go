package apidocs

import (
	"bytes"
	"encoding/json"
	"errors"
	"html/template"
	"regexp"
	"strings"
)

// ExampleCompanyID is the company id the explorer's X-Company-Id field
// starts with: the demo data's first company (gendata.DemoCompanyA), the
// one the document's examples use, so that `gateway demo`'s keys work at
// once. Scalar's input shows a fixed placeholder of its own; a value is the
// only way to show an id's form, and a caller replaces it with their own.
const ExampleCompanyID = "0a5e7c1e-0000-4000-8000-00000000000a"

// explorerConfig is the explorer's configuration (Scalar's options): nothing
// fetched from elsewhere (no web fonts, telemetry or AI agent), "try it"
// requests go straight to the gateway, and the key and company id are asked
// once, in the Authentication panel, the company id filled with an example.
var explorerConfig = map[string]any{
	"url":                "/api/openapi.yaml",
	"slug":               "api", // anchors: /api/docs#api/description/errors
	"hideClientButton":   true,  // its link opens the document on scalar.com
	"withDefaultFonts":   false,
	"telemetry":          false,
	"agent":              map[string]any{"disabled": true},
	"showDeveloperTools": "never",
	"showToolbar":        "never",
	"defaultOpenAllTags": true,
	"persistAuth":        false,
	"hideModels":         false,
	"authentication": map[string]any{
		"preferredSecurityScheme": []any{[]string{"bearerAuth", "companyId"}},
		"securitySchemes":         map[string]any{"companyId": map[string]any{"value": ExampleCompanyID}},
	},
	"metaData": map[string]string{"title": "Invoicing API reference"},
}

var explorerTmpl = template.Must(template.New("explorer").Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}} {{.Version}} — reference</title>
</head>
<body>
<noscript>
<h1>{{.Title}} {{.Version}}</h1>
<p>The interactive reference needs JavaScript. Read the OpenAPI document
(<a href="/api/openapi.yaml">YAML</a>, <a href="/api/openapi.json">JSON</a>), the
<a href="/api/docs/errors">errors guide</a>, or import the
<a href="/api/collection.json">Postman collection</a>.</p>
</noscript>
<script id="api-reference" data-url="/api/openapi.yaml" data-configuration="{{.Config}}"></script>
<script src="{{.Script}}"></script>
</body>
</html>
`))

func renderExplorer(doc map[string]any) ([]byte, error) {
	cfg, err := json.Marshal(explorerConfig)
	if err != nil {
		return nil, err
	}
	info, _ := doc["info"].(map[string]any)
	var b bytes.Buffer
	err = explorerTmpl.Execute(&b, map[string]any{
		"Title": info["title"], "Version": info["version"], "Config": string(cfg), "Script": explorerJSPath,
	})
	return b.Bytes(), err
}

// ProblemCodes returns the codes the document's ProblemCode enum lists, in
// its order, and the explanation of each (x-enumDescriptions).
func ProblemCodes(doc map[string]any) ([]string, map[string]string, error) {
	pc, ok := dig(doc, "components", "schemas", "ProblemCode").(map[string]any)
	if !ok {
		return nil, nil, errors.New("no components.schemas.ProblemCode")
	}
	enum, _ := pc["enum"].([]any)
	var codes []string
	for _, v := range enum {
		s, ok := v.(string)
		if !ok {
			return nil, nil, errors.New("ProblemCode enum holds a non-string")
		}
		codes = append(codes, s)
	}
	desc := map[string]string{}
	if m, ok := pc["x-enumDescriptions"].(map[string]any); ok {
		for k, v := range m {
			s, _ := v.(string)
			desc[k] = s
		}
	}
	return codes, desc, nil
}

func dig(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

var (
	codeSpan = regexp.MustCompile("`([^`]+)`")
	// statusPrefix is how each explanation starts ("400. "): the page shows
	// the status from the gateway's table instead.
	statusPrefix = regexp.MustCompile(`^[0-9]{3}\. `)
)

// inlineMarkdown renders the explanations' only markup, `code` spans, after
// escaping everything else.
func inlineMarkdown(s string) template.HTML {
	esc := template.HTMLEscapeString(statusPrefix.ReplaceAllString(s, ""))
	return template.HTML(codeSpan.ReplaceAllString(esc, "<code>$1</code>"))
}

type errorRow struct {
	Code, Title string
	Status      int
	Text        template.HTML
}

var errorsTmpl = template.Must(template.New("errors").Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Errors — {{.Title}}</title>
<style>
body{font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;max-width:52rem;margin:2rem auto;padding:0 1rem;color:#1b1b1f}
code,pre{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.9em;background:#f3f3f6;border-radius:4px}
code{padding:.1em .3em}pre{padding:1em;overflow:auto}
section{border-top:1px solid #e2e2e8;padding:.5rem 0}section:target{background:#fff8d6}
h2{font-size:1.1rem;margin:.6rem 0 .2rem}.status{color:#555;font-weight:normal}
a{color:#2c5cc5}nav a{margin-right:1rem}
</style>
</head>
<body>
<nav><a href="/api/docs">API reference</a><a href="/api/docs#api/description/authentication">Authentication</a><a href="/api/docs#api/description/rate-limits">Rate limits</a><a href="/api/docs#api/description/webhooks">Webhooks</a><a href="/api/openapi.yaml">OpenAPI document</a></nav>
<h1>Errors</h1>
<p>Every error of the {{.Title}} is <code>application/problem+json</code> (RFC 9457):</p>
<pre>{
  "type": "/api/docs/errors#not_found",
  "title": "Resource not found",
  "status": 404,
  "detail": "No such resource.",
  "code": "not_found",
  "requestId": "9f86d081884c7d659a2feaa0"
}</pre>
<p>Program against <code>code</code>: it is stable, and new codes may be added within
version 1 (treat an unknown one by its HTTP status). <code>title</code> and
<code>detail</code> are for people. <code>errors</code>, for
<code>invalid_parameter</code> and <code>invalid_body</code>, lists each invalid input
as <code>{"field", "message"}</code>. <code>requestId</code> equals the
<code>X-Request-Id</code> header: quote it to support.</p>
<p>What to do, in short: fix and resend a <code>400</code>, <code>404</code>,
<code>409</code>, <code>413</code> or <code>415</code>; check the key, company and
scopes on a <code>401</code> or <code>403</code>; wait <code>Retry-After</code> seconds
on a <code>429</code> or <code>503</code>, then back off exponentially with jitter; retry
a <code>500</code> later.</p>
{{range .Rows}}<section id="{{.Code}}">
<h2><code>{{.Code}}</code> <span class="status">{{if .Status}}{{.Status}} {{end}}{{.Title}}</span></h2>
<p>{{.Text}}</p>
</section>
{{end}}</body>
</html>
`))

// renderErrors is the errors guide: one section per code, its id the code,
// so that a problem's type (/api/docs/errors#<code>) lands on it.
func renderErrors(doc map[string]any, table []Code) ([]byte, error) {
	codes, desc, err := ProblemCodes(doc)
	if err != nil {
		return nil, err
	}
	var rows []errorRow
	listed := map[string]bool{}
	for _, c := range table {
		rows = append(rows, errorRow{Code: c.Name, Status: c.Status, Title: c.Title, Text: inlineMarkdown(desc[c.Name])})
		listed[c.Name] = true
	}
	for _, c := range codes {
		if !listed[c] {
			rows = append(rows, errorRow{Code: c, Text: inlineMarkdown(desc[c])})
		}
	}
	info, _ := doc["info"].(map[string]any)
	title, _ := info["title"].(string)
	var b bytes.Buffer
	err = errorsTmpl.Execute(&b, map[string]any{"Title": strings.TrimSpace(title), "Rows": rows})
	return b.Bytes(), err
}
