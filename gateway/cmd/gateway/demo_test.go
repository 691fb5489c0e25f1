package main

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

// The demo starts with nothing installed and its printed curl lines work as
// printed.
func TestDemoCurlLinesWork(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl not installed")
	}
	printed := runDemo(t)
	var lines []string
	for _, l := range strings.Split(printed, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "curl ") {
			lines = append(lines, strings.TrimSpace(l))
		}
	}
	if len(lines) < 5 {
		t.Fatalf("too few curl lines:\n%s", printed)
	}
	for _, l := range lines {
		if i := strings.Index(l, "   # "); i > 0 { // the demo's explanatory comments
			l = l[:i]
		}
		cmd := exec.Command("bash", "-c", l+" -w '\\n%{http_code}'")
		b, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s: %v", l, err)
		}
		s := strings.TrimSpace(string(b))
		nl := strings.LastIndexByte(s, '\n')
		if nl < 0 {
			t.Fatalf("%s: no body: %q", l, s)
		}
		code, body := s[nl+1:], s[:nl]
		if code != "200" && code != "201" {
			t.Errorf("%s\n-> %s %s", l, code, body)
		}
		var v map[string]any
		if err := json.Unmarshal([]byte(body), &v); err != nil {
			t.Errorf("%s: not JSON: %s", l, body)
		}
	}
}
