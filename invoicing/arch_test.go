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
// against); the adapters (authz, tenants, usage, idempotency, audit, backend)
// only those; gateway, the public API, reaches the adapters a request needs;
// admin, the admin API, mounts on gateway's admin listener and reaches the
// adapters administration needs, and gateway never imports it; the commands
// may import anything.
var allowedImports = map[string][]string{
	"invoicing":        {},
	"internal/tracing": {},
	"internal/logbuf":  {},
	"internal/jsonlog": {"internal/jsonstr"},
	"internal/jsonstr": {},
	"internal/testenv": {},
	"internal/apitest": {"gateway/apidocs"},
	"internal/durable": {},
	"gateway/apidocs":  {},
	"admin/console":    {},
	"client":           {}, // integrators' code: the wire format only, none of the gateway's
	"authz":            {"invoicing", "internal/tracing", "internal/durable"},
	"tenants":          {"invoicing", "internal/tracing", "internal/durable"},
	"usage":            {"invoicing"},
	"idempotency":      {"invoicing"},
	"audit":            {"invoicing", "internal/durable"},
	"backend":          {"invoicing", "internal/tracing"},
	"backend/gendata":  {"backend", "invoicing"},
	"events":           {"invoicing", "internal/tracing"},
	"gateway":          {"invoicing", "internal/tracing", "authz", "tenants", "idempotency", "backend", "gateway/apidocs", "internal/jsonstr", "internal/jsonlog"},
	"admin":            {"invoicing", "authz", "tenants", "usage", "audit", "events", "gateway", "gateway/apidocs", "admin/console"},
}

// TestImportRules reads every non-test Go file of the module and fails on an
// import between our packages that the layout does not allow, or on a new
// package the table does not place.
func TestImportRules(t *testing.T) {
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
		if strings.HasPrefix(pkg, "cmd/") {
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
	httpPackages    = []string{"gateway", "admin"}
	adapterPackages = []string{"authz", "tenants", "usage", "idempotency", "audit", "backend"}
)

// TestHTTPLayerMapsErrorsByKind holds the HTTP layer (both listeners: the
// public API's gateway and the admin API's admin) to one error vocabulary:
// its problem table (gateway/problem.go) imports no adapter, and no file of
// it names an adapter's error variable (authz.ErrX, ...): it answers an
// adapter's error by the kind and code the error carries (invoicing.Define),
// so a new adapter error needs no edit in it.
func TestHTTPLayerMapsErrorsByKind(t *testing.T) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "../gateway/problem.go", nil, parser.ImportsOnly)
	if err != nil {
		t.Fatal(err)
	}
	for _, imp := range f.Imports {
		if dep, ours := strings.CutPrefix(strings.Trim(imp.Path.Value, `"`), module); ours && dep != "invoicing" {
			t.Errorf("gateway/problem.go imports %s: the problem table maps kinds, not an adapter's errors", dep)
		}
	}
	named := 0
	for _, pkg := range httpPackages {
		files, err := filepath.Glob(filepath.Join("..", pkg, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range files {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			names := map[string]string{} // local name → adapter
			for _, imp := range f.Imports {
				dep, ours := strings.CutPrefix(strings.Trim(imp.Path.Value, `"`), module)
				if !ours || !contains(adapterPackages, dep) {
					continue
				}
				local := filepath.Base(dep)
				if imp.Name != nil {
					local = imp.Name.Name
				}
				names[local] = dep
			}
			ast.Inspect(f, func(n ast.Node) bool {
				sel, ok := n.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				if x, ok := sel.X.(*ast.Ident); ok && names[x.Name] != "" {
					named++
					if strings.HasPrefix(sel.Sel.Name, "Err") {
						t.Errorf("%s: %s.%s: map an adapter's error by its kind and code (invoicing.KindOf, problemFor), not by name", fset.Position(sel.Pos()), x.Name, sel.Sel.Name)
					}
				}
				return true
			})
		}
	}
	if named == 0 {
		t.Fatal("the HTTP layer names nothing of the adapters: the check above read no file")
	}
}

// TestAdminAnswersThroughGateway holds the admin API to the one writer: its
// handlers return an answer or an error and gateway's writeAnswers writes
// it, so no file of admin takes a ResponseWriter or writes a status itself.
func TestAdminAnswersThroughGateway(t *testing.T) {
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join("..", "admin", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	read := 0
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		read++
		ast.Inspect(f, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok && (sel.Sel.Name == "ResponseWriter" || sel.Sel.Name == "WriteHeader") {
				t.Errorf("%s: %s: admin's handlers return their answer or error; gateway writes it", fset.Position(sel.Pos()), sel.Sel.Name)
			}
			return true
		})
	}
	if read == 0 {
		t.Fatal("read no file of admin")
	}
}
