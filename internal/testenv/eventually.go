package testenv

import (
	"fmt"
	"testing"
	"time"
)

// Patience is how long Eventually waits: far longer than anything it waits
// for takes on an idle machine, so that on a busy one (two cores, other
// suites beside) a test waits instead of failing. A test that does fail
// takes this long to say so, which is the price of never failing by chance.
const Patience = 3 * time.Minute

// Eventually waits for work done in the background: it calls cond until it
// returns nil, first every millisecond and then more and more seldom (up
// to every 50 ms), and fails the test with what it waited for and cond's
// last error when Patience passes first, or when the test's own deadline
// (go test -timeout) is near. It never measures speed: what must not
// happen is proved by waiting for what would come first, not by waiting
// here for it not to come.
func Eventually(t testing.TB, what string, cond func() error) {
	t.Helper()
	start := time.Now()
	end := start.Add(Patience)
	if d, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		// Leave a moment to report before go test's timeout panics.
		if dl, ok := d.Deadline(); ok && dl.Add(-5*time.Second).Before(end) {
			end = dl.Add(-5 * time.Second)
		}
	}
	wait := time.Millisecond
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("waited %v for %s: %v", time.Since(start).Round(time.Second), what, err)
		}
		time.Sleep(wait)
		wait = min(2*wait, 50*time.Millisecond)
	}
}

// Want is the error an Eventually condition returns while got is not want.
func Want[T comparable](got, want T, what string) error {
	if got == want {
		return nil
	}
	return fmt.Errorf("%s: %v, want %v", what, got, want)
}
