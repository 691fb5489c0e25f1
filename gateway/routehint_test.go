package gateway

import (
	"strings"
	"testing"

	"github.com/invoicing-ao/gateway/internal/apitest"
)

// Every operation's path, as the document writes it, is named by the 404 of
// a path that ends like it: routeHint's table is the document's.
func TestRouteHintKnowsEveryOperation(t *testing.T) {
	t.Parallel()
	doc, err := apitest.Doc()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for path := range doc.Paths.Map() {
		tail, ok := strings.CutPrefix(path, apiPrefix)
		if !ok {
			t.Fatalf("%s: not under %s", path, apiPrefix)
		}
		n++
		sent := "/api/v1" + strings.ReplaceAll(tail, "{id}", "3b9a8f51")
		if got := routeHint(sent); !strings.Contains(got, " "+path+"?") {
			t.Errorf("routeHint(%s) = %q; want it to name %s", sent, got, path)
		}
	}
	if n != len(apiPaths) {
		t.Errorf("%d paths in the document, want %d (apiPaths)", n, len(apiPaths))
	}
}
