package main

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// spin uses d of this process's CPU, however long a busy machine takes to
// give it (within a generous limit).
func spin(t *testing.T, d time.Duration) {
	t.Helper()
	start, err := procCPU(os.Getpid())
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	for limit := time.Now().Add(time.Minute); ; {
		if now, _ := procCPU(os.Getpid()); now-start >= d {
			return
		}
		if time.Now().After(limit) {
			t.Fatalf("did not get %v of CPU within a minute", d)
		}
		for end := time.Now().Add(time.Millisecond); time.Now().Before(end); {
		}
	}
}

// The meter's lines for what shares the machine: this process (the load
// tool), processes by name, and the machine's busy and idle time, each
// counted only between begin and end.
func TestCPUMeterWatchesTheMachine(t *testing.T) {
	t.Parallel()
	comm, err := os.ReadFile("/proc/self/comm")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	var m cpuMeter
	m.watchAll()
	m.add("this process by name", 0, commCPU(strings.TrimSpace(string(comm))))
	spin(t, 100*time.Millisecond) // not measured: before begin
	m.begin()
	spin(t, 300*time.Millisecond)
	m.end()
	var out strings.Builder
	m.print(&out, 1000)
	report := out.String()
	t.Log(report)
	per := func(name string) float64 {
		re := regexp.MustCompile(`CPU per request, ` + regexp.QuoteMeta(name) + `(?: \(pid \d+\))?: ([\d.]+) µs`)
		m := re.FindStringSubmatch(report)
		if m == nil {
			t.Fatalf("no line for %s:\n%s", name, report)
		}
		v, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return v
	}
	// At least 300 ms of CPU over 1,000 requests: 300 µs each, give or
	// take the 10 ms clock tick (spin stops once it has its 300 ms; the
	// runtime's own threads may add a little).
	for _, name := range []string{"load tool", "this process by name"} {
		if v := per(name); v < 290 || v > 1000 {
			t.Errorf("%s: %.1f µs per request, want about 300", name, v)
		}
	}
	if v := per("machine busy (all cores)"); v < 250 {
		t.Errorf("machine busy: %.1f µs per request, want at least about this process's 300", v)
	}
	per("machine idle (all cores)")
	per("postgres (all its processes)")
}

// Readings of processes by name never go back, whatever comes and goes
// between them (CI once reported PostgreSQL at -20 µs per request: a backend
// of another test ended during the measure).
func TestGrowthOfProcessesByName(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	readings := []map[int]time.Duration{
		{1: 10 * ms, 2: 20 * ms},     // the first reading: everything so far
		{1: 15 * ms, 2: 30 * ms},     // both grew: +15
		{1: 18 * ms},                 // 2 ended: +3, what it had stays counted
		{1: 18 * ms, 3: 4 * ms},      // 3 started between readings: +4
		{1: 2 * ms, 3: 4 * ms},       // pid 1 reused by a new process: +2
		{1: 2 * ms, 3: 4 * ms, 4: 0}, // nothing used
	}
	want := []time.Duration{30 * ms, 45 * ms, 48 * ms, 52 * ms, 54 * ms, 54 * ms}
	i := 0
	read := growth(func() (map[int]time.Duration, error) { i++; return readings[i-1], nil })
	for j := range readings {
		got, err := read()
		if err != nil || got != want[j] {
			t.Errorf("reading %d: %v, %v; want %v", j, got, err, want[j])
		}
	}
}

func TestMachineCPU(t *testing.T) {
	t.Parallel()
	busy, idle, err := machineCPU()
	if err != nil {
		t.Skipf("no /proc/stat: %v", err)
	}
	if busy <= 0 || idle < 0 {
		t.Fatalf("busy %v, idle %v", busy, idle)
	}
	spin(t, 50*time.Millisecond)
	busy2, idle2, err := machineCPU()
	if err != nil || busy2 < busy || idle2 < idle {
		t.Fatalf("went back: busy %v → %v, idle %v → %v (%v)", busy, busy2, idle, idle2, err)
	}
}
