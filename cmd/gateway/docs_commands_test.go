package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// docCommand is a `gateway` command line in a code line of a document: at
// the line's start (after variable assignments) or inside $( ).
var docCommand = regexp.MustCompile(`^(?:[A-Z_]+=\S+ )*(?:[A-Z_]+=\$\()?(gateway [^)]*?)\)?$`)

// The command lines the README and docs/ show are the binary's own, so the
// pages cannot drift from the command table: a synopsis (a line with [ or |)
// is its command's usage line, with or without [--config FILE]; any other
// line parses with its command's own flags and arguments. Lines are read from
// indented code and from ```sh blocks; commands joined by && are read one by
// one, and a trailing comment (two spaces, #) or & is not part of a command.
func TestDocsShowRealCommands(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no docs/*.md: %v", err)
	}
	files = append(files, filepath.Join(repoRoot, "README.md"), filepath.Join(repoRoot, "deploy", "CAPACITY.md"))
	byName := map[string]*command{}
	for _, c := range commands {
		byName[c.name] = c
	}
	checked := 0
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimPrefix(file, repoRoot+"/")
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
				m := docCommand.FindStringSubmatch(code)
				if m == nil {
					continue
				}
				checked++
				where := name + ":" + strconv.Itoa(i+1)
				words := strings.Fields(m[1])[1:]
				var c *command
				for n := min(2, len(words)); n > 0 && c == nil; n-- {
					c = byName[strings.Join(words[:n], " ")]
				}
				if c == nil {
					t.Errorf("%s: %q: no such command", where, m[1])
					continue
				}
				if strings.ContainsAny(m[1], "[|") {
					if want := c.usageLine(); m[1] != want && m[1] != strings.TrimSuffix(want, " [--config FILE]") {
						t.Errorf("%s: synopsis\n\t%s\nis not the command's usage line\n\t%s", where, m[1], want)
					}
					continue
				}
				fs, _, _ := c.newFlagSet()
				pos, err := parseFlags(fs, words[len(strings.Fields(c.name)):])
				if err == nil {
					err = c.check(fs, pos)
				}
				if err != nil {
					t.Errorf("%s: %q does not parse: %v", where, m[1], err)
				}
			}
		}
	}
	if checked < 15 {
		t.Errorf("only %d command lines found in the docs: is the pattern still right?", checked)
	}
}
