package testenv

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestEventuallyWaitsForTheCondition(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	go func() {
		for range 5 {
			n.Add(1)
		}
	}()
	calls := 0
	Eventually(t, "five", func() error { calls++; return Want(n.Load(), 5, "n") })
	if n.Load() != 5 || calls == 0 {
		t.Fatalf("returned with n = %d after %d calls", n.Load(), calls)
	}
}

// fatalRecorder is a testing.TB whose Fatalf ends the calling goroutine, as
// testing.T's does, and keeps the message; Deadline is near, so that
// Eventually gives up at once.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Helper() {}
func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	panic(f)
}
func (f *fatalRecorder) Deadline() (time.Time, bool) { return time.Now(), true }

func TestEventuallyFailsWithTheLastError(t *testing.T) {
	t.Parallel()
	f := &fatalRecorder{}
	calls := 0
	func() {
		defer func() {
			if r := recover(); r != f {
				t.Fatalf("Eventually did not fail the test: %v", r)
			}
		}()
		Eventually(f, "the impossible", func() error { calls++; return errors.New(fmt.Sprint("seen ", calls)) })
	}()
	if !strings.Contains(f.msg, "the impossible") || !strings.Contains(f.msg, fmt.Sprint("seen ", calls)) {
		t.Errorf("message %q: want what was awaited and the last error", f.msg)
	}
}

func TestWant(t *testing.T) {
	t.Parallel()
	if err := Want(2, 2, "n"); err != nil {
		t.Errorf("Want(2, 2) = %v", err)
	}
	if err := Want("a", "b", "name"); err == nil || err.Error() != "name: a, want b" {
		t.Errorf("Want(a, b) = %v", err)
	}
}

type waiter struct{}

func (waiter) wait(a, b chan struct{}) {
	select {
	case <-a:
	case <-b:
	}
}

func TestGoroutinesWaitingIn(t *testing.T) {
	a, b := make(chan struct{}), make(chan struct{})
	for range 3 {
		go waiter{}.wait(a, b)
	}
	const fn = "github.com/invoicing-ao/gateway/internal/testenv.waiter.wait"
	Eventually(t, "three goroutines in the select", func() error { return Want(GoroutinesWaitingIn(fn), 3, "waiting") })
	close(a)
	Eventually(t, "none after the release", func() error { return Want(GoroutinesWaitingIn(fn), 0, "waiting") })
}
