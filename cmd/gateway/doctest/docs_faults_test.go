package doctest

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// faultsPromised are the faults docs/operators.md's "What survives what"
// must have a row for, by the start of the row's name.
var faultsPromised = []string{
	"Failover with a lagging replica", "Replica down", "Redis restarted with AOF", "Redis restarted from its last snapshot",
	"Redis restarted empty", "Eviction", "Redis full", "Redis unreachable", "An instance killed",
}

// faultRow is a row of the table: the fault, and the tests it names by
// file.
type faultRow struct {
	fault string
	cells []string
	tests map[string][]string // file (from the repository's root) → test names
}

var (
	faultName = regexp.MustCompile(`^\*\*([^*]+)\*\*`)
	citedFile = regexp.MustCompile("`([\\w./-]+_test\\.go)`")
	citedTest = regexp.MustCompile(`\bTest[A-Z]\w*`)
)

// declaredAt matches the declaration of the test name.
func declaredAt(name string) *regexp.Regexp {
	return regexp.MustCompile(`(?m)^func ` + regexp.QuoteMeta(name) + `\(t \*testing\.T\)`)
}

// TestFaultTableNamesItsTests holds docs/operators.md's table of faults
// ("What survives what") and the tests together: every fault promised has
// a row, each row says what is kept, what is lost, what to do and which
// tests back it; each test a row names is declared in the file named before
// it; and every test of cmd/gateway's fault suite (faults_*_test.go) is
// named in a row, so that a test renamed, moved or added cannot leave the
// table behind.
func TestFaultTableNamesItsTests(t *testing.T) {
	t.Parallel()
	rows := faultTable(t)
	named := map[string]bool{} // "file TestName"
	for _, row := range rows {
		if len(row.cells) != 5 || slices.Contains(row.cells, "") {
			t.Errorf("%s: %d cells, want fault, kept, lost, what to do, tested by, none empty", row.fault, len(row.cells))
		}
		if len(row.tests) == 0 {
			t.Errorf("%s: names no test", row.fault)
		}
		for file, tests := range row.tests {
			src, err := os.ReadFile(filepath.Join(repoRoot, file))
			if err != nil {
				t.Errorf("%s: %v", row.fault, err)
				continue
			}
			for _, name := range tests {
				named[file+" "+name] = true
				if !declaredAt(name).Match(src) {
					t.Errorf("%s: %s is not a test of %s", row.fault, name, file)
				}
			}
		}
	}
	for _, want := range faultsPromised {
		if !slices.ContainsFunc(rows, func(r faultRow) bool { return strings.HasPrefix(r.fault, want) }) {
			t.Errorf("no row for %q", want)
		}
	}
	suite, err := filepath.Glob(filepath.Join(repoRoot, "cmd/gateway/faults_*_test.go"))
	if err != nil || len(suite) == 0 {
		t.Fatalf("no fault tests found: %v", err)
	}
	for _, path := range suite {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		file := "cmd/gateway/" + filepath.Base(path)
		for _, m := range regexp.MustCompile(`(?m)^func (Test\w+)\(`).FindAllStringSubmatch(string(src), -1) {
			if !named[file+" "+m[1]] {
				t.Errorf("%s's %s is in no row of the table", file, m[1])
			}
		}
	}
}

// faultTable reads the rows of the table of "## What survives what".
func faultTable(t *testing.T) []faultRow {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "docs/operators.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## What survives what\n")
	if !ok {
		t.Fatal(`docs/operators.md has no "## What survives what"`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	if !strings.Contains(section, "\n| fault | kept | lost | what to do | tested by |\n") {
		t.Fatal("the table's header is not fault, kept, lost, what to do, tested by")
	}
	var rows []faultRow
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "| **") {
			continue
		}
		cells := strings.Split(strings.TrimSuffix(strings.TrimPrefix(line, "| "), " |"), " | ")
		row := faultRow{cells: cells, tests: map[string][]string{}}
		if m := faultName.FindStringSubmatch(cells[0]); m != nil {
			row.fault = m[1]
		}
		for _, part := range strings.Split(cells[len(cells)-1], ";") {
			file := citedFile.FindStringSubmatch(part)
			if file == nil {
				t.Errorf("%s: %q names no test file", row.fault, part)
				continue
			}
			row.tests[file[1]] = append(row.tests[file[1]], citedTest.FindAllString(part, -1)...)
		}
		rows = append(rows, row)
	}
	if len(rows) < len(faultsPromised) {
		t.Fatalf("%d rows found: is the table still one line per row?", len(rows))
	}
	return rows
}
