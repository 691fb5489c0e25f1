package main

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/internal/testenv"
)

// The demo starts with nothing installed and its printed curl lines work as
// printed.
func TestDemoCurlLinesWork(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl not installed")
	}
	ctx, cancel := context.WithCancel(context.Background())
	var out, errb testenv.SyncBuffer
	done := make(chan int, 1)
	env := envOf(map[string]string{"GATEWAY_ADDR": "127.0.0.1:0", "GATEWAY_ADMIN_ADDR": "127.0.0.1:0"})
	go func() { done <- run(ctx, []string{"demo", "--data", t.TempDir()}, &out, &errb, env) }()
	deadline := time.After(60 * time.Second)
	for !strings.Contains(out.String(), "Press Ctrl+C") {
		select {
		case code := <-done:
			t.Fatalf("demo exited %d: %s %s", code, out.String(), errb.String())
		case <-deadline:
			t.Fatalf("demo not ready: %s %s", out.String(), errb.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	var lines []string
	for _, l := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "curl ") {
			lines = append(lines, strings.TrimSpace(l))
		}
	}
	if len(lines) < 5 {
		t.Fatalf("too few curl lines:\n%s", out.String())
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
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("demo exit %d: %s", code, errb.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("demo did not stop")
	}
}
