package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// typescriptAsDocumented follows the TypeScript section of
// docs/integrators.md as an integrator would, word for word: its commands
// make an npm project in an empty directory and generate the types from
// the demo (base stands for its http://localhost:8080), the snippet saved
// as invoices.ts is type-checked by the section's tsc line (strict, with
// no tsconfig of ours) and run by its tsx line, with KEY and COMPANY set.
// The npm install lines run once under the user's cache, keyed by their
// text, and later runs start from a copy of what they made.
func typescriptAsDocumented(t *testing.T, base, key, company string) {
	tool(t, "npm")
	tool(t, "node")
	install, rest, snippet := docsTypeScript(t)
	project := npmProject(t, install)
	dir := npmCopy(t, project, project, "package.json", "package-lock.json")
	if err := os.WriteFile(filepath.Join(dir, "invoices.ts"), snippet, 0o644); err != nil {
		t.Fatal(err)
	}
	var out string
	for _, line := range rest {
		out = shell(t, dir, strings.ReplaceAll(line, "http://localhost:8080", base), "KEY="+key, "COMPANY="+company)
	}
	if !regexp.MustCompile(`^[0-9]+ \[`).MatchString(out) {
		t.Fatalf("docs/integrators.md's snippet printed %q", out)
	}
}

// docsTypeScript reads the TypeScript section of docs/integrators.md: the
// npm install lines of its commands (npm init and install), the others
// (generating the types, checking and running the snippet) in order, and
// the snippet.
func docsTypeScript(t *testing.T) (install, rest []string, snippet []byte) {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "integrators.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)\n### TypeScript\n(.*?)\n### ").FindSubmatch(doc)
	if m == nil {
		t.Fatal("no TypeScript section in docs/integrators.md")
	}
	section := string(m[1])
	s := regexp.MustCompile("(?s)```ts\n(.*?)```").FindStringSubmatch(section)
	if s == nil {
		t.Fatal("no ts block in the TypeScript section of docs/integrators.md")
	}
	for _, line := range strings.Split(section, "\n") {
		cmd, ok := strings.CutPrefix(line, "    ")
		switch {
		case !ok || strings.TrimSpace(cmd) == "":
		case strings.HasPrefix(cmd, "npm "):
			install = append(install, cmd)
		default:
			rest = append(rest, cmd)
		}
	}
	if len(install) == 0 || len(rest) < 3 {
		t.Fatalf("the TypeScript section's commands: %q then %q", install, rest)
	}
	return install, rest, []byte(s[1])
}

// npmProject runs the install lines in a directory of the user's cache
// named by their text, once, and returns it.
func npmProject(t *testing.T, install []string) string {
	t.Helper()
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(strings.Join(install, "\n")))
	return npmCached(t, filepath.Join(cache, "gateway-npm", "docs-typescript-"+hex.EncodeToString(sum[:6])), func(into string) ([]byte, error) {
		for _, line := range install {
			cmd := exec.Command("sh", "-c", line)
			cmd.Dir = into
			if out, err := cmd.CombinedOutput(); err != nil {
				return out, fmt.Errorf("%s: %w", line, err)
			}
		}
		return nil, nil
	})
}

// shell runs a documented command line in dir with env added, and returns
// its standard output; a failure shows both outputs.
func shell(t *testing.T, dir, line string, env ...string) string {
	t.Helper()
	cmd := exec.Command("sh", "-c", line)
	cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s%s", line, err, out, stderr.String())
	}
	return string(out)
}
