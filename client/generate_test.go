package client_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The committed generated code is what the //go:generate line of
// generate.go makes of the document today: a changed document without `go
// generate ./client` fails here. The generator is fetched through the Go
// module proxy (pinned), so without it the test is skipped, except under
// CI=true.
func TestGeneratedCodeIsCurrent(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short: runs the generator")
	}
	src, err := os.ReadFile("generate.go")
	if err != nil {
		t.Fatal(err)
	}
	var args []string
	for _, line := range strings.Split(string(src), "\n") {
		if rest, ok := strings.CutPrefix(line, "//go:generate go "); ok {
			args = strings.Fields(rest)
		}
	}
	out := filepath.Join(t.TempDir(), "client.gen.go")
	found := false
	for i := range args {
		if args[i] == "-o" && i+1 < len(args) {
			args[i+1], found = out, true
		}
	}
	if !found {
		t.Fatalf("no //go:generate go … -o FILE line in generate.go: %q", args)
	}
	cmd := exec.Command("go", args...)
	if msg, err := cmd.CombinedOutput(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, msg)
		}
		t.Skipf("the generator does not run here (offline?): %v\n%s", err, msg)
	}
	want, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("client.gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("client.gen.go is not what the generator makes of gateway/apidocs/openapi.yaml: run `go generate ./client` and commit it")
	}
}
