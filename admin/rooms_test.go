package admin

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strings"
	"testing"
)

// maxRoomMethods bounds the methods of any type of the package, those its
// embedded base gives it included: a room is one resource's operations
// and handlers, and a type that grows past it mixes resources again.
const maxRoomMethods = 24

// Every type of the package has at most maxRoomMethods methods, counted
// from the source (declared, and promoted from the types it embeds).
func TestRoomsAreSmall(t *testing.T) {
	fset := token.NewFileSet()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	methods := map[string]int{}
	embeds := map[string][]string{}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, e.Name(), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv != nil {
					methods[typeName(d.Recv.List[0].Type)]++
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					ts, ok := s.(*ast.TypeSpec)
					if !ok {
						continue
					}
					st, ok := ts.Type.(*ast.StructType)
					if !ok {
						continue
					}
					for _, fl := range st.Fields.List {
						if len(fl.Names) == 0 {
							embeds[ts.Name.Name] = append(embeds[ts.Name.Name], typeName(fl.Type))
						}
					}
				}
			}
		}
	}
	if methods["Service"] == 0 {
		t.Fatalf("no methods counted: %v", methods)
	}
	for typ := range methods {
		n := methods[typ]
		for _, e := range embeds[typ] {
			n += methods[e]
		}
		if n > maxRoomMethods {
			t.Errorf("%s has %d methods, more than %d: split it by resource", typ, n, maxRoomMethods)
		}
	}
}

// typeName is the name of a receiver's or an embedded field's type.
func typeName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return typeName(e.X)
	case *ast.Ident:
		return e.Name
	case *ast.IndexExpr: // a generic type's
		return typeName(e.X)
	case *ast.SelectorExpr:
		return e.Sel.Name
	}
	return ""
}
