package doctest

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// docCommand is a `gateway` command line in a code line of a document: at
// the line's start (after variable assignments) or inside $( ).
var docCommand = regexp.MustCompile(`^(?:[A-Z_]+=\S+ )*(?:[A-Z_]+=\$\()?(gateway [^)]*?)\)?$`)

// benchCommand is a `gateway-bench` command line in a code line of a
// document, after variable assignments.
var benchCommand = regexp.MustCompile(`^(?:[A-Z_]+=\S+ )*(gateway-bench(?: .*)?)$`)

// goRun is `go run` of one of the binaries, which a document may show instead
// of the installed binary: its command line is the binary's.
var goRun = regexp.MustCompile(`^go run \./cmd/(gateway(?:-bench)?) `)

// docFiles are the documents whose commands, names and paths are checked:
// README.md, docs/*.md, deploy/CAPACITY.md and every README.md under deploy/.
func docFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no docs/*.md: %v", err)
	}
	files = append(files, filepath.Join(repoRoot, "README.md"), filepath.Join(repoRoot, "deploy", "CAPACITY.md"))
	err = filepath.WalkDir(filepath.Join(repoRoot, "deploy"), func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() == "README.md" {
			files = append(files, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// The command lines the README and docs/ show are the binaries' own, so the
// pages cannot drift from the command table or gateway-bench's flags: a
// synopsis (a line with [ or |) is its command's usage line, with or without
// [--config FILE]; any other line parses with its command's own flags and
// arguments (gateway's: as the binary parses them, with the flags it
// requires and as many arguments as it takes; gateway-bench's: its flags,
// their values' types, and --mix one of its operations). Lines are read from
// indented code and from ```sh blocks; commands joined by && are read one by
// one, a trailing comment (two spaces, #) or & is not part of a command, and
// `go run ./cmd/X` is X.
func TestDocsShowRealCommands(t *testing.T) {
	t.Parallel()
	files := docFiles(t)
	bench := benchCLIOf(t)
	gw := gatewayCLIOf(t)
	checked, benchChecked := 0, 0
	for _, file := range files {
		for _, l := range docCodeLines(t, file) {
			if m := benchCommand.FindStringSubmatch(l.code); m != nil {
				checked++
				benchChecked++
				if err := bench.check(m[1]); err != nil {
					t.Errorf("%s: %q: %v", l.where, m[1], err)
				}
				continue
			}
			if m := docCommand.FindStringSubmatch(l.code); m != nil {
				checked++
				if err := gw.check(t, m[1]); err != nil {
					t.Errorf("%s: %q: %v", l.where, m[1], err)
				}
			}
		}
	}
	if checked < 15 || benchChecked == 0 {
		t.Errorf("only %d command lines found in the docs (%d of gateway-bench): is the pattern still right?", checked, benchChecked)
	}
}

// codeLine is a command of a document's code: where it is (file:line) and
// its text.
type codeLine struct{ where, code string }

// docCodeLines are the commands of file's indented code and ```sh blocks:
// commands joined by && one by one, without a trailing comment (two
// spaces, #) or &, and `go run ./cmd/X` as X.
func docCodeLines(t *testing.T, file string) []codeLine {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	name := strings.TrimPrefix(file, repoRoot+"/")
	var out []codeLine
	var fence string // the open ``` block's language
	for i, raw := range strings.Split(string(b), "\n") {
		if lang, ok := strings.CutPrefix(raw, "```"); ok {
			if fence == "" {
				fence = "(" + lang + ")"
			} else {
				fence = ""
			}
			continue
		}
		code, ok := strings.CutPrefix(raw, "    ")
		if fence != "" {
			code, ok = raw, fence == "(sh)"
		}
		if !ok {
			continue
		}
		if at := strings.Index(code, "  #"); at >= 0 {
			code = code[:at]
		}
		for _, code := range strings.Split(code, " && ") {
			code = strings.TrimSuffix(strings.TrimSpace(code), " &")
			out = append(out, codeLine{name + ":" + strconv.Itoa(i+1), goRun.ReplaceAllString(code, "$1 ")})
		}
	}
	return out
}

// benchCLI is what gateway-bench's --help says of its command line.
type benchCLI struct {
	usage string            // the synopsis
	flags map[string]string // name → its value's type ("" for a switch)
	ops   []string          // the operations --mix takes, besides all
}

// benchCLIOf builds gateway-bench and reads its --help: its own flag set,
// not a copy that could drift.
func benchCLIOf(t *testing.T) benchCLI {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "gateway-bench")
	if out, err := exec.Command("go", "build", "-o", bin, "../../gateway-bench").CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/gateway-bench: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("gateway-bench --help: %v\n%s", err, out)
	}
	b := benchCLI{flags: map[string]string{}}
	flagLine := regexp.MustCompile(`^  -([a-z0-9-]+)(?: (\w+))?$`)
	lines := strings.Split(string(out), "\n")
	for i, l := range lines {
		if l == "Usage:" && i+1 < len(lines) {
			b.usage = strings.TrimSpace(lines[i+1])
		}
		m := flagLine.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		b.flags[m[1]] = m[2]
		if m[1] == "mix" && i+1 < len(lines) {
			_, list, _ := strings.Cut(lines[i+1], "one operation: ")
			list, _, _ = strings.Cut(list, " (default")
			b.ops = strings.Split(list, ", ")
		}
	}
	if !strings.HasPrefix(b.usage, "gateway-bench ") || len(b.flags) < 10 || len(b.ops) < 3 {
		t.Fatalf("gateway-bench --help no longer reads as expected (usage %q, %d flags, --mix %v):\n%s", b.usage, len(b.flags), b.ops, out)
	}
	return b
}

// check parses a gateway-bench command line shown in a document.
func (b benchCLI) check(line string) error {
	if strings.ContainsAny(line, "[|") {
		if line != b.usage {
			return fmt.Errorf("synopsis is not the usage line\n\t%s", b.usage)
		}
		return nil
	}
	set := flag.NewFlagSet("gateway-bench", flag.ContinueOnError)
	set.SetOutput(io.Discard)
	values := map[string]*docValue{}
	for name, typ := range b.flags {
		values[name] = &docValue{typ: typ}
		set.Var(values[name], name, "")
	}
	if err := set.Parse(strings.Fields(line)[1:]); err != nil {
		return err
	}
	if set.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", set.Arg(0))
	}
	if mix := values["mix"]; mix.set && mix.v != "all" && !slices.Contains(b.ops, mix.v) {
		return fmt.Errorf("--mix %s: not all nor one of %v", mix.v, b.ops)
	}
	return nil
}

// docValue is a flag's value in a document: of its flag's type, or a shell
// variable ($PID) that stands for one.
type docValue struct {
	typ string
	v   string
	set bool
}

func (d *docValue) String() string   { return d.v }
func (d *docValue) IsBoolFlag() bool { return d.typ == "" }

func (d *docValue) Set(s string) error {
	d.v, d.set = s, true
	if strings.HasPrefix(s, "$") {
		return nil
	}
	var err error
	switch d.typ {
	case "":
		_, err = strconv.ParseBool(s)
	case "int":
		_, err = strconv.Atoi(s)
	case "duration":
		_, err = time.ParseDuration(s)
	}
	return err
}
