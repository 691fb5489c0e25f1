package main

import (
	"fmt"
	"runtime/debug"
)

// defaultMemoryLimit is the Go runtime's soft memory limit when GOMEMLIMIT is
// not set: room for the caches of 10,000 keys of 1,000 companies (73 MiB
// resident after docs/performance.md's memory run, with the binary's own
// pages; 89 MiB with a 64 MiB limit, against the 100 MiB target), and well
// under the containers' memory limits (deploy/k8s: 256 MiB).
const defaultMemoryLimit = 48 << 20

// tuneGC sets the garbage collector of `gateway serve`, unless the operator set
// GOGC or GOMEMLIMIT (the Go runtime's own variables, which then win): no
// proportional collection (GOGC=off) under a soft memory limit. A serving
// gateway's live heap is small (a few MiB of caches) while it allocates
// hundreds of KiB per second per request stream, so the default GOGC=100
// collected several times a second: 10 % of its CPU, and 15 % of its
// throughput on GET by id. With a limit, the heap grows
// to the limit and is collected there; a live heap near the limit makes the
// collector run more, never past the limit's memory.
func tuneGC(env func(string) string) string {
	if env("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(defaultMemoryLimit)
	}
	if env("GOGC") == "" {
		debug.SetGCPercent(-1)
	}
	gc := "off"
	if p := debug.SetGCPercent(-1); p >= 0 {
		gc = fmt.Sprint(p)
		debug.SetGCPercent(p)
	}
	return fmt.Sprintf("GOGC=%s GOMEMLIMIT=%dMiB", gc, debug.SetMemoryLimit(-1)>>20)
}
