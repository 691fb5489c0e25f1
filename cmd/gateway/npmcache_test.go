package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// npmInstalls serializes the installs of one cache directory within the
// test process: the portal's, the guides' and the integrators' tests run
// in parallel and share installs.
var npmInstalls sync.Map // directory: *sync.Mutex

// npmCached returns dir, a directory of the user's cache that install
// fills (npm packages), installing it first unless a complete install is
// there. An install is made in a directory of its own and renamed into
// place once complete, so that no test ever sees a half-made node_modules:
// not another process's under way, nor one an interrupted run left (it
// lacks the marker, and is replaced). A failed install fails the test
// under CI and skips it elsewhere (offline).
func npmCached(t *testing.T, dir string, install func(into string) ([]byte, error)) string {
	t.Helper()
	mu, _ := npmInstalls.LoadOrStore(dir, &sync.Mutex{})
	mu.(*sync.Mutex).Lock()
	defer mu.(*sync.Mutex).Unlock()
	marker := func(d string) string { return filepath.Join(d, ".installed") }
	if _, err := os.Stat(marker(dir)); err == nil {
		return dir
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), filepath.Base(dir)+".installing-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp) // nothing left when the rename took it
	if out, err := install(tmp); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("npm install into %s: %v\n%s", dir, err, out)
		}
		t.Skipf("npm install into %s failed (offline?): %v", dir, err)
	}
	if err := os.WriteFile(marker(tmp), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		// Another process finished first, or an incomplete install is in
		// the way: the first is used, the second replaced.
		if _, serr := os.Stat(marker(dir)); serr == nil {
			return dir
		}
		if rerr := os.RemoveAll(dir); rerr != nil {
			t.Fatal(errors.Join(err, rerr))
		}
		if err := os.Rename(tmp, dir); err != nil {
			t.Fatal(fmt.Errorf("put the npm install in place: %w", err))
		}
	}
	return dir
}
