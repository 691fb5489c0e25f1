package admin

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

func TestTokenEqual(t *testing.T) {
	t.Parallel()
	const want = "admin-secret-token"
	for given, ok := range map[string]bool{
		want: true, "": false, "admin-secret-toke": false, want + "n": false, strings.ToUpper(want): false,
		"admin-secret-tokeN": false, strings.Repeat(want, 1000): false, "x": false,
	} {
		if tokenEqual(given, want) != ok {
			t.Errorf("tokenEqual(%.30q) = %v", given, !ok)
		}
	}
}

// The admin token is only ever compared through tokenEqual (or checked for
// being unset): a plain == or bytes.Equal on it would answer faster the more
// leading characters a guess gets right.
func TestAdminTokenOnlyComparedInConstantTime(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	uses := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		// Record the token uses that are allowed, then flag the others.
		allowed := map[ast.Node]bool{}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.BinaryExpr:
				if lit, ok := n.Y.(*ast.BasicLit); ok && lit.Value == `""` && isAdminToken(n.X) {
					allowed[n.X] = true
				}
			case *ast.CallExpr:
				if id, ok := n.Fun.(*ast.Ident); ok && id.Name == "tokenEqual" {
					for _, a := range n.Args {
						allowed[a] = true
					}
				}
			}
			return true
		})
		ast.Inspect(f, func(n ast.Node) bool {
			if e, ok := n.(ast.Expr); ok && isAdminToken(e) {
				uses++
				if !allowed[e] {
					t.Errorf("%s: the admin token is used outside tokenEqual", fset.Position(e.Pos()))
				}
				return false
			}
			return true
		})
	}
	if uses < 2 {
		t.Fatalf("found %d uses of the admin token: the check looks at nothing", uses)
	}
}

func isAdminToken(e ast.Expr) bool {
	sel, ok := e.(*ast.SelectorExpr)
	return ok && sel.Sel.Name == "adminToken"
}
