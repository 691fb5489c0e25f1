package main

import (
	"math"
	"runtime/debug"
	"testing"
)

// tuneGC sets what the operator left unset, and nothing else. Not
// parallel: the garbage collector's settings are the process's.
func TestTuneGC(t *testing.T) {
	pct0, lim0 := debug.SetGCPercent(100), debug.SetMemoryLimit(math.MaxInt64)
	t.Cleanup(func() { debug.SetGCPercent(pct0); debug.SetMemoryLimit(lim0) })
	for _, c := range []struct {
		name     string
		env      map[string]string
		pct      int   // as the runtime had it from the real environment
		limit    int64 // idem
		want     string
		wantPct  int
		wantLimt int64
	}{
		{"neither set", nil, 100, math.MaxInt64, "GOGC=off GOMEMLIMIT=48MiB", -1, 48 << 20},
		{"GOGC set", map[string]string{"GOGC": "150"}, 150, math.MaxInt64, "GOGC=150 GOMEMLIMIT=48MiB", 150, 48 << 20},
		{"GOMEMLIMIT set", map[string]string{"GOMEMLIMIT": "1GiB"}, 100, 1 << 30, "GOGC=off GOMEMLIMIT=1024MiB", -1, 1 << 30},
		{"both set", map[string]string{"GOGC": "off", "GOMEMLIMIT": "200MiB"}, -1, 200 << 20, "GOGC=off GOMEMLIMIT=200MiB", -1, 200 << 20},
	} {
		t.Run(c.name, func(t *testing.T) {
			debug.SetGCPercent(c.pct)
			debug.SetMemoryLimit(c.limit)
			got := tuneGC(func(k string) string { return c.env[k] })
			if got != c.want {
				t.Errorf("tuneGC = %q, want %q", got, c.want)
			}
			if p := debug.SetGCPercent(c.wantPct); p != c.wantPct {
				t.Errorf("GC percent %d, want %d", p, c.wantPct)
			}
			if l := debug.SetMemoryLimit(-1); l != c.wantLimt {
				t.Errorf("memory limit %d, want %d", l, c.wantLimt)
			}
		})
	}
}
