package testenv

import (
	"runtime"
	"strings"
)

// GoroutinesWaitingIn counts the goroutines of the process blocked in a
// select directly inside fn (its full name, as a stack trace writes it:
// "github.com/invoicing-ao/gateway/authz.(*flight).do"). A test waits for
// it to reach the number of callers it started, with Eventually, to know
// that they all wait (for a shared result, a slot) before it lets the
// awaited thing happen: a signal, where a sleep would only make it likely.
// It counts the whole process: a test that uses it does not run in
// parallel with others that may block in fn.
func GoroutinesWaitingIn(fn string) int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		// "goroutine 7 [select]:", then the innermost frame, "fn(...)".
		lines := strings.SplitN(g, "\n", 3)
		if len(lines) > 1 && strings.Contains(lines[0], " [select") && strings.HasPrefix(lines[1], fn+"(") {
			count++
		}
	}
	return count
}
