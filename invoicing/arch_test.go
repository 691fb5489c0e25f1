package invoicing

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

const module = "github.com/invoicing-ao/gateway/"

// allowedImports is who may import whom among our packages (README,
// "Layout"): the vocabulary and the internal helpers import none of ours;
// the adapters (authz, tenants, usage, audit, backend) only those; gateway wires
// them; the commands may import anything.
var allowedImports = map[string][]string{
	"invoicing":        {},
	"internal/tracing": {},
	"internal/logbuf":  {},
	"internal/jsonlog": {"internal/jsonstr"},
	"internal/jsonstr": {},
	"internal/testenv": {},
	"gateway/apidocs":  {},
	"gateway/console":  {},
	"client":           {}, // integrators' code: the wire format only, none of the gateway's
	"authz":            {"invoicing", "internal/tracing"},
	"tenants":          {"invoicing", "internal/tracing"},
	"usage":            {"invoicing"},
	"idempotency":      {"invoicing"},
	"audit":            {"invoicing"},
	"backend":          {"invoicing", "internal/tracing"},
	"backend/gendata":  {"backend", "invoicing"},
	"gateway":          {"invoicing", "internal/tracing", "authz", "tenants", "usage", "idempotency", "audit", "backend", "gateway/apidocs", "gateway/console", "internal/jsonstr", "internal/jsonlog"},
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
