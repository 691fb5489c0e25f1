package invoicing

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

const module = "github.com/invoicing-ao/gateway/"

// allowedImports is who may import whom among our packages (README,
// "Layout"): the vocabulary and the internal helpers import none of ours
// (apitest, the tests' checker of answers, only the document it checks
// against); the adapters (authz, tenants, usage, shape, idempotency, audit,
// backend, events) only those; web, the HTTP layer of both listeners, only
// the vocabulary and internal helpers; events/history, the events' store
// in the gateway's own database, only the vocabulary and internal helpers
// (events' packages import it); gateway, the public API, stands on
// web and reaches the adapters a request needs; admin, the admin API,
// stands on web and reaches the adapters administration needs; neither
// gateway nor admin imports the other (the binary assembles the admin
// listener from both); the commands may import anything but the
// configuration's package, which the deploy files' checks read too: it
// checks each setting by its component's own rules, never an HTTP layer's.
var allowedImports = map[string][]string{
	"invoicing":        {},
	"internal/tracing": {},
	"internal/logbuf":  {},
	"internal/jsonlog": {"internal/jsonstr"},
	"internal/jsonstr": {},
	"internal/testenv": {},
	"internal/apitest": {"gateway/apidocs"},
	// the tests' whole gateways, wired as the binary wires them
	"internal/apitest/harness": {"internal/apitest", "internal/testenv", "internal/sharedkey", "invoicing", "web", "gateway", "admin", "authz", "tenants",
		"usage", "shape", "audit", "idempotency", "backend", "backend/gendata", "events", "internal/sqldb"},
	"internal/durable":    {},
	"internal/seal":       {},
	"internal/redisscan":  {},
	"internal/redisstate": {},
	"internal/sharedkey":  {},
	"internal/sqldb":      {}, // the gateway's own database: open, migrate, partition
	"gateway/apidocs":     {},
	"admin/console":       {},
	"client":              {}, // integrators' code: the wire format only, none of the gateway's
	"authz":               {"invoicing", "internal/tracing", "internal/durable", "internal/redisscan"},
	"tenants":             {"invoicing", "internal/tracing", "internal/durable", "internal/redisscan"},
	"usage":               {"invoicing"},
	"shape":               {"invoicing"},
	"idempotency":         {"invoicing"},
	"audit":               {"invoicing", "internal/sqldb", "internal/redisscan"}, // its log in the gateway's own database; redisscan for the upgrade from Redis
	"backend":             {"invoicing", "internal/tracing"},
	"backend/gendata":     {"backend", "invoicing"},
	"events":              {"invoicing", "internal/tracing", "internal/durable"},
	"events/history":      {"invoicing", "internal/sqldb"}, // the events' history: what events' packages import, never the other way
	"web":                 {"invoicing", "internal/tracing", "internal/jsonlog"},
	"gateway":             {"invoicing", "web", "authz", "tenants", "idempotency", "gateway/apidocs", "internal/jsonstr"},
	"state":               {"internal/durable"}, // the file and the writes' order; each adapter its own records, wired by cmd/gateway
	"admin":               {"invoicing", "web", "authz", "tenants", "usage", "shape", "audit", "events", "gateway/apidocs", "admin/console"},
	// the settings and their checks, by the components' own rules
	"cmd/gateway/internal/config": {"invoicing", "authz", "tenants", "backend", "events", "internal/seal"},
}

// TestImportRules reads every non-test Go file of the module and fails on an
// import between our packages that the layout does not allow, or on a new
// package the table does not place.
func TestImportRules(t *testing.T) {
	t.Parallel()
	fset := token.NewFileSet()
	seen := map[string]bool{}
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) && path != ".." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		pkg := filepath.ToSlash(filepath.Dir(strings.TrimPrefix(path, "../")))
		if _, placed := allowedImports[pkg]; strings.HasPrefix(pkg, "cmd/") && !placed {
			return nil // the commands wire everything
		}
		allowed, known := allowedImports[pkg]
		if !known {
			t.Errorf("package %s is not in the import rules (invoicing/arch_test.go) nor the README's layout", pkg)
			return nil
		}
		seen[pkg] = true
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			dep, ours := strings.CutPrefix(strings.Trim(imp.Path.Value, `"`), module)
			if ours && !contains(allowed, dep) {
				t.Errorf("%s imports %s: not allowed (README, Layout)", path, dep)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for pkg := range allowedImports {
		if !seen[pkg] {
			t.Errorf("the import rules name %s, which has no Go file", pkg)
		}
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// httpPackages speak HTTP; adapterPackages are reached through them.
var (
	httpPackages    = []string{"web", "gateway", "admin"}
	adapterPackages = []string{"authz", "tenants", "usage", "shape", "idempotency", "audit", "backend", "events"}
)

// TestHTTPLayerMapsErrorsByKind holds the HTTP layer (web, and both
// listeners' APIs on it: the public API's gateway and the admin API's admin)
// to one error vocabulary: its problem table (web/problem.go) imports no
// adapter, and no file of it names an adapter's error, whether a variable (authz.ErrX), an error type
// (*backend.SomeError) or anything an adapter exports given to errors.Is or
// errors.As, asserted or switched on. It answers an adapter's error by the
// kind and code the error carries (invoicing.Define), and reads what else a
// problem tells through interfaces of invoicing (invoicing.ClientConflict),
// so a new adapter error needs no edit in it.
func TestHTTPLayerMapsErrorsByKind(t *testing.T) {
	t.Parallel()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "../web/problem.go", nil, parser.ImportsOnly)
	if err != nil {
		t.Fatal(err)
	}
	for _, imp := range f.Imports {
		if dep, ours := strings.CutPrefix(strings.Trim(imp.Path.Value, `"`), module); ours && dep != "invoicing" {
			t.Errorf("web/problem.go imports %s: the problem table maps kinds, not an adapter's errors", dep)
		}
	}
	errNames := map[string]map[string]bool{} // adapter → its error variables and types
	types := 0
	for _, pkg := range adapterPackages {
		errNames[pkg] = adapterErrors(t, fset, pkg)
		if len(errNames[pkg]) == 0 {
			t.Errorf("found no error of %s: is adapterErrors still right?", pkg)
		}
		for name := range errNames[pkg] {
			if !strings.HasPrefix(name, "Err") {
				types++
			}
		}
	}
	if types == 0 {
		t.Fatal("found no adapter error type: is adapterErrors still right?")
	}
	for _, pkg := range httpPackages {
		for _, f := range sourceFiles(t, fset, pkg) {
			for _, m := range adapterErrorsNamed(fset, f, errNames) {
				t.Errorf("%s: map an adapter's error by its kind and code (invoicing.KindOf, web.Problem) and the interfaces of invoicing, not by name", m)
			}
		}
	}

	// The check finds each way of naming an adapter's error.
	const sample = `package gateway
import (
	"errors"
	"github.com/invoicing-ao/gateway/backend"
	tz "github.com/invoicing-ao/gateway/tenants"
	"github.com/invoicing-ao/gateway/events"
)
func f(err error) {
	var taken *backend.NIFConflictError
	_ = errors.As(err, &taken)
	_ = errors.Is(err, backend.ErrNotFound)
	_ = errors.Is(err, tz.Anything)
	_, _ = err.(*events.Whatever)
	var ex events.Other
	_ = errors.As(err, &ex)
	switch err.(type) {
	case *backend.Something:
	}
	_ = backend.Config{}
}`
	sf, err := parser.ParseFile(fset, "sample.go", sample, 0)
	if err != nil {
		t.Fatal(err)
	}
	fake := map[string]map[string]bool{"backend": {"NIFConflictError": true, "ErrNotFound": true}, "tenants": {}, "events": {}}
	var got []string
	for _, m := range adapterErrorsNamed(fset, sf, fake) {
		got = append(got, m[strings.LastIndex(m, " ")+1:])
	}
	want := []string{"backend.NIFConflictError", "backend.ErrNotFound", "tz.Anything", "events.Whatever", "events.Other", "backend.Something"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("the check found %v in the sample, want %v", got, want)
	}
}

// adapterErrors is the exported error variables and error types of the
// adapter pkg: variables named Err* or made by invoicing.Define, errors.New
// or fmt.Errorf, and types with an Error method.
func adapterErrors(t *testing.T, fset *token.FileSet, pkg string) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	for _, f := range sourceFiles(t, fset, pkg) {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.GenDecl:
				if d.Tok != token.VAR {
					continue
				}
				for _, spec := range d.Specs {
					vs := spec.(*ast.ValueSpec)
					for i, n := range vs.Names {
						if !n.IsExported() {
							continue
						}
						if strings.HasPrefix(n.Name, "Err") || (i < len(vs.Values) && madeAsError(vs.Values[i])) {
							names[n.Name] = true
						}
					}
				}
			case *ast.FuncDecl:
				if d.Recv == nil || d.Name.Name != "Error" || len(d.Recv.List) != 1 {
					continue
				}
				typ := d.Recv.List[0].Type
				if star, ok := typ.(*ast.StarExpr); ok {
					typ = star.X
				}
				if id, ok := typ.(*ast.Ident); ok && id.IsExported() {
					names[id.Name] = true
				}
			}
		}
	}
	return names
}

// madeAsError reports whether v is a call that makes an error.
func madeAsError(v ast.Expr) bool {
	call, ok := v.(*ast.CallExpr)
	if !ok {
		return false
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	x, ok := sel.X.(*ast.Ident)
	if !ok {
		return false
	}
	switch x.Name + "." + sel.Sel.Name {
	case "invoicing.Define", "errors.New", "fmt.Errorf":
		return true
	}
	return false
}

// adapterErrorsNamed is where f names an adapter's error ("position: x.Name"):
// an identifier of errNames (adapter → its errors) anywhere, or any
// identifier of an adapter given to errors.Is or errors.As (directly, or as
// the type of the variable errors.As fills), asserted or switched on.
func adapterErrorsNamed(fset *token.FileSet, f *ast.File, errNames map[string]map[string]bool) []string {
	local := adapterImports(f)
	var found []string
	seen := map[token.Pos]bool{}
	flag := func(sel *ast.SelectorExpr) {
		if !seen[sel.Pos()] {
			seen[sel.Pos()] = true
			x := sel.X.(*ast.Ident)
			found = append(found, fset.Position(sel.Pos()).String()+": "+x.Name+"."+sel.Sel.Name)
		}
	}
	// adapterSel is n when it is an adapter's exported identifier.
	adapterSel := func(n ast.Node) (*ast.SelectorExpr, bool) {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return nil, false
		}
		x, ok := sel.X.(*ast.Ident)
		if !ok || local[x.Name] == "" {
			return nil, false
		}
		return sel, true
	}
	// flagAll flags every adapter identifier within n.
	flagAll := func(n ast.Node) {
		if n == nil {
			return
		}
		ast.Inspect(n, func(n ast.Node) bool {
			if sel, ok := adapterSel(n); ok {
				flag(sel)
			}
			return true
		})
	}
	ast.Inspect(f, func(n ast.Node) bool {
		if sel, ok := adapterSel(n); ok && errNames[local[sel.X.(*ast.Ident).Name]][sel.Sel.Name] {
			flag(sel)
		}
		switch n := n.(type) {
		case *ast.CallExpr:
			sel, ok := n.Fun.(*ast.SelectorExpr)
			if !ok || (sel.Sel.Name != "Is" && sel.Sel.Name != "As") {
				break
			}
			if x, ok := sel.X.(*ast.Ident); !ok || x.Name != "errors" {
				break
			}
			for _, arg := range n.Args {
				flagAll(arg)
				// errors.As(err, &v): v's declared type.
				if u, ok := arg.(*ast.UnaryExpr); ok && u.Op == token.AND {
					if id, ok := u.X.(*ast.Ident); ok && id.Obj != nil {
						if vs, ok := id.Obj.Decl.(*ast.ValueSpec); ok {
							flagAll(vs.Type)
						}
					}
				}
			}
		case *ast.TypeAssertExpr:
			flagAll(n.Type)
		case *ast.TypeSwitchStmt:
			for _, c := range n.Body.List {
				for _, e := range c.(*ast.CaseClause).List {
					flagAll(e)
				}
			}
		}
		return true
	})
	return found
}

// adapterImports maps the names f gives the adapters it imports to the
// adapters' paths within the module.
func adapterImports(f *ast.File) map[string]string {
	local := map[string]string{}
	for _, imp := range f.Imports {
		dep, ours := strings.CutPrefix(strings.Trim(imp.Path.Value, `"`), module)
		if !ours || !contains(adapterPackages, dep) {
			continue
		}
		name := filepath.Base(dep)
		if imp.Name != nil {
			name = imp.Name.Name
		}
		local[name] = dep
	}
	return local
}

// TestAdminAnswersThroughWeb holds the admin API to the one writer: its
// handlers return an answer or an error and web's writeAnswers writes it,
// so no file of admin takes a ResponseWriter or writes a status itself.
func TestAdminAnswersThroughWeb(t *testing.T) {
	t.Parallel()
	fset := token.NewFileSet()
	for _, f := range sourceFiles(t, fset, "admin") {
		ast.Inspect(f, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok && (sel.Sel.Name == "ResponseWriter" || sel.Sel.Name == "WriteHeader") {
				t.Errorf("%s: %s: admin's handlers return their answer or error; web writes it", fset.Position(sel.Pos()), sel.Sel.Name)
			}
			return true
		})
	}
}

// sourceFiles parses the files of package pkg (a folder under the module's
// root), tests left out; none is a failure: the folder moved.
func sourceFiles(t *testing.T, fset *token.FileSet, pkg string) []*ast.File {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("..", pkg, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, path := range paths {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	if len(files) == 0 {
		t.Fatalf("read no file of %s", pkg)
	}
	return files
}
