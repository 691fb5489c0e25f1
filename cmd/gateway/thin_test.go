package main

import (
	"os/exec"
	"strings"
	"testing"
)

// The production binary links no load generator: the load tool and its
// ceiling service are gateway-bench's (cmd/gateway-bench).
func TestBinaryIsThin(t *testing.T) {
	t.Parallel()
	goTool, err := exec.LookPath("go") // go test puts its own go first on PATH
	if err != nil {
		t.Fatalf("the go tool: %v", err)
	}
	out, err := exec.Command(goTool, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 || !strings.Contains(string(out), "github.com/invoicing-ao/gateway/gateway\n") {
		t.Fatalf("go list -deps listed no gateway dependencies:\n%s", out)
	}
	for _, pkg := range deps {
		if strings.HasPrefix(pkg, "github.com/tsenart/vegeta") || strings.Contains(pkg, "gateway-bench") {
			t.Errorf("the gateway binary links %s", pkg)
		}
	}
}
