// Package console is the platform team's admin console: a single-page web
// app, embedded in the binary and served on the admin listener at /console,
// that signs in with the admin token (kept in the tab's session storage,
// sent as a bearer header, never a cookie) and shows every company's
// traffic and who comes nearest their limit, finds companies by name or
// NIF, and shows one company's keys, limits (with what a limit being typed
// would have refused, and its requests per second against the limit),
// usage, webhook endpoints (with their delivery logs) and audit log,
// through the admin API. It holds the files (one page, its style and
// a few plain scripts, no framework); the admin package serves them.
package console

import "embed"

// Path is where the console is served.
const Path = "/console"

//go:embed ui
var ui embed.FS

// Asset is one file of the console.
type Asset struct {
	Path        string // under Path
	ContentType string
	Body        []byte
}

// CSP lets the console's page run only its own script and style, and talk
// only to its own origin (the admin API).
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// scripts are the page's scripts, in the order it runs them: core.js first
// (what the others share), app.js last (it renders the page).
var scripts = []string{"core.js", "limits.js", "overview.js", "company.js", "audit.js", "webhooks.js", "deliveries.js", "app.js"}

// Assets are the console's files: the page at Path, its scripts and style.
func Assets() []Asset {
	read := func(name string) []byte {
		b, err := ui.ReadFile("ui/" + name)
		if err != nil {
			panic(err) // embedded: cannot happen
		}
		return b
	}
	out := []Asset{
		{Path, "text/html; charset=utf-8", read("index.html")},
		{Path + "/style.css", "text/css; charset=utf-8", read("style.css")},
	}
	for _, name := range scripts {
		out = append(out, Asset{Path + "/" + name, "text/javascript; charset=utf-8", read(name)})
	}
	return out
}
