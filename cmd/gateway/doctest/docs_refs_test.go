package doctest

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

var (
	// testName is a test, fuzz target or benchmark named in a document; a
	// name after a dot (pkg.TestType) is an identifier, not a test.
	testName = regexp.MustCompile(`(^|[^.\w])((?:Test|Fuzz|Benchmark)[A-Z0-9_]\w*)`)
	// testPattern is go test's -run, -bench or -fuzz with its pattern.
	testPattern = regexp.MustCompile(`(?:^|\s)-(run|bench|fuzz)[ =](?:'([^']*)'|"([^"]*)"|([^\s'"` + "`" + `]+))`)
	// packageArg is a package directory given to go test (./gateway/).
	packageArg = regexp.MustCompile(`(?:^|\s)\./([\w./-]*\w)/?(?:\s|$|` + "`" + `)`)
	// codeSpan and linkTarget are where a document cites a path outside code
	// lines.
	codeSpan   = regexp.MustCompile("`([^`]+)`")
	linkTarget = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	// goIdent is pkg.Name at a path's end (internal/testenv.RedisCluster).
	goIdent = regexp.MustCompile(`^(.*)\.([A-Z]\w*)$`)
)

// What the README, docs/ and deploy's READMEs cite exists: every test, fuzz
// target and benchmark they name is a function of a _test.go file (a go test
// -run, -bench or -fuzz pattern matches one, in the packages the command
// names), and every repository path in their code, code spans and links is
// there (a glob matches something; pkg.Name names a declaration of the
// package), so that a renamed test or a moved file cannot leave a page
// pointing at nothing.
func TestDocsCiteWhatExists(t *testing.T) {
	t.Parallel()
	funcs := testFuncs(t)
	var names, paths int
	for _, file := range docFiles(t) {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		rel := strings.TrimPrefix(file, repoRoot+"/")
		dir := filepath.Dir(file)
		fenced := false
		for i, line := range strings.Split(string(b), "\n") {
			where := rel + ":" + strconv.Itoa(i+1)
			if strings.HasPrefix(line, "```") {
				fenced = !fenced
				continue
			}
			// Patterns first: their names may be parts of a test's name.
			rest := line
			for _, m := range testPattern.FindAllStringSubmatch(line, -1) {
				names++
				if err := patternMatches(funcs, m[1], m[2]+m[3]+m[4], packageArgs(line)); err != "" {
					t.Errorf("%s: %s", where, err)
				}
				rest = strings.Replace(rest, m[0], "", 1)
			}
			for _, m := range testName.FindAllStringSubmatch(rest, -1) {
				names++
				if !funcs.has(m[2]) {
					t.Errorf("%s: %s: no test, fuzz target or benchmark has this name", where, m[2])
				}
			}
			var cited []string
			if fenced || strings.HasPrefix(line, "    ") {
				cited = append(cited, line)
			} else {
				for _, m := range codeSpan.FindAllStringSubmatch(line, -1) {
					cited = append(cited, m[1])
				}
			}
			for _, m := range linkTarget.FindAllStringSubmatch(line, -1) {
				if target, _, _ := strings.Cut(m[1], "#"); target != "" && !strings.Contains(target, "://") && !strings.HasPrefix(target, "mailto:") {
					paths++
					if !exists(filepath.Join(dir, target)) {
						t.Errorf("%s: link to %s: no such file", where, m[1])
					}
				}
			}
			for _, text := range cited {
				for _, p := range pathsIn(text) {
					at, ok := repoPath(dir, p)
					if !ok {
						continue
					}
					paths++
					if !citedExists(at) {
						t.Errorf("%s: %s: not in the repository", where, p)
					}
				}
			}
		}
	}
	if names < 50 || paths < 50 {
		t.Errorf("only %d test names and %d paths found in the docs: are the patterns still right?", names, paths)
	}
}

// testNames is every test, fuzz target, benchmark and example, by package
// directory (relative to the repository, slashed).
type testNames map[string]map[string]bool

func (n testNames) has(name string) bool {
	for _, names := range n {
		if names[name] {
			return true
		}
	}
	return false
}

// testFuncs reads the names of the repository's test functions.
func testFuncs(t *testing.T) testNames {
	t.Helper()
	decl := regexp.MustCompile(`(?m)^func ((?:Test|Fuzz|Benchmark|Example)\w*)\(`)
	n := testNames{}
	err := filepath.WalkDir(repoRoot, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != repoRoot && (d.Name() == "node_modules" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		pkg, err := filepath.Rel(repoRoot, filepath.Dir(path))
		if err != nil {
			return err
		}
		pkg = filepath.ToSlash(pkg)
		if n[pkg] == nil {
			n[pkg] = map[string]bool{}
		}
		for _, m := range decl.FindAllStringSubmatch(string(b), -1) {
			n[pkg][m[1]] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(n["invoicing"]) == 0 {
		t.Fatal("found no test of invoicing: is the walk still right?")
	}
	return n
}

// packageArgs are the package directories a go test line names; none for
// ./... or when it names none (any package then).
func packageArgs(line string) []string {
	var dirs []string
	for _, m := range packageArg.FindAllStringSubmatch(line, -1) {
		if m[1] != ".." {
			dirs = append(dirs, strings.TrimSuffix(m[1], "/..."))
		}
	}
	return dirs
}

// patternMatches checks a go test pattern: each alternative that names
// anything (not ^$) matches a function of the flag's kind in one of dirs
// (any directory when there are none). It returns what is wrong, or "".
func patternMatches(funcs testNames, flag, pattern string, dirs []string) string {
	prefixes := map[string][]string{"run": {"Test", "Example", "Fuzz"}, "bench": {"Benchmark"}, "fuzz": {"Fuzz"}}[flag]
	for _, alt := range alternatives(pattern) {
		if !strings.ContainsAny(strings.ToLower(alt), "abcdefghijklmnopqrstuvwxyz") {
			continue
		}
		re, err := regexp.Compile(alt)
		if err != nil {
			return "-" + flag + " " + pattern + ": " + err.Error()
		}
		found := false
		for dir, names := range funcs {
			if !inDirs(dir, dirs) {
				continue
			}
			for name := range names {
				if re.MatchString(name) && hasAnyPrefix(name, prefixes) {
					found = true
				}
			}
		}
		if !found {
			return "-" + flag + " " + pattern + ": " + alt + " matches no " + strings.Join(prefixes, "/") + " function in " + strings.Join(dirs, ", ")
		}
	}
	return ""
}

// alternatives splits a pattern at its top-level |s.
func alternatives(pattern string) []string {
	var out []string
	depth, from := 0, 0
	for i, r := range pattern {
		switch r {
		case '(':
			depth++
		case ')':
			depth--
		case '|':
			if depth == 0 {
				out = append(out, pattern[from:i])
				from = i + 1
			}
		}
	}
	return append(out, pattern[from:])
}

// inDirs reports whether the package directory dir is one of dirs or under
// one; any is when dirs is empty.
func inDirs(dir string, dirs []string) bool {
	for _, d := range dirs {
		if dir == d || strings.HasPrefix(dir, d+"/") {
			return true
		}
	}
	return len(dirs) == 0
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// pathsIn are the words of text that look like paths: with a slash, not a
// URL, an absolute path (the API's routes), a placeholder or a shell
// expansion.
func pathsIn(text string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(text, func(r rune) bool { return strings.ContainsRune(" \t'\"=(),;`", r) }) {
		w = strings.TrimRight(w, ".,:;")
		w = strings.TrimPrefix(w, "./")
		if w, _, _ = strings.Cut(w, "#"); !strings.Contains(w, "/") || strings.Contains(w, "://") || strings.HasPrefix(w, "/") ||
			strings.ContainsAny(w, "<>{}$…") {
			continue
		}
		out = append(out, w)
	}
	return out
}

// repoPath is where p points when its first element is an entry of the
// repository's root, or of the document's directory; ok is false for words
// that are not this repository's paths (media types, import paths, CIDRs).
func repoPath(docDir, p string) (string, bool) {
	first, _, _ := strings.Cut(p, "/")
	if first == ".." {
		return filepath.Join(docDir, p), true
	}
	if exists(filepath.Join(repoRoot, first)) {
		if at := filepath.Join(docDir, p); docDir != repoRoot && citedExists(at) {
			return at, true
		}
		return filepath.Join(repoRoot, p), true
	}
	if docDir != repoRoot && exists(filepath.Join(docDir, first)) {
		return filepath.Join(docDir, p), true
	}
	return "", false
}

// citedExists reports whether a cited path is there: a file or directory, a
// glob's match, or pkg.Name, a declaration of that package.
func citedExists(p string) bool {
	if strings.Contains(p, "*") {
		m, _ := filepath.Glob(p)
		return len(m) > 0
	}
	if exists(p) {
		return true
	}
	m := goIdent.FindStringSubmatch(p)
	if m == nil || !exists(m[1]) {
		return false
	}
	files, _ := filepath.Glob(filepath.Join(m[1], "*.go"))
	decl := regexp.MustCompile(`(?m)^(?:func (?:\([^)]*\) )?|type |var |const |\t)` + m[2] + `\b`)
	for _, f := range files {
		if b, err := os.ReadFile(f); err == nil && decl.Match(b) {
			return true
		}
	}
	return false
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
