package main

import (
	"fmt"
	"io"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// benchReport summarizes one measured load: exact latency percentiles (every
// latency is kept), per operation and overall.
type benchReport struct {
	name            string
	ops             map[string]*opStats
	all             *opStats
	elapsed         time.Duration // the measured loads' wall time
	throughput      float64       // 2xx answers per second
	transportErrors int
	errorSample     string
	cpu             cpuMeter // processes whose CPU per request is reported
}

type opStats struct {
	latencies []time.Duration
	ok        int
	statuses  map[int]int
}

func newBenchReport(name string) *benchReport {
	return &benchReport{name: name, ops: map[string]*opStats{}, all: &opStats{statuses: map[int]int{}}}
}

func (r *benchReport) add(res *vegeta.Result) {
	op := opOf(res.Method, res.URL)
	s := r.ops[op]
	if s == nil {
		s = &opStats{statuses: map[int]int{}}
		r.ops[op] = s
	}
	for _, s := range []*opStats{s, r.all} {
		s.latencies = append(s.latencies, res.Latency)
		s.statuses[int(res.Code)]++
		if res.Code >= 200 && res.Code < 300 {
			s.ok++
		}
	}
	if res.Code == 0 {
		r.transportErrors++
		r.errorSample = res.Error
	}
}

func (r *benchReport) finish() {
	for _, s := range r.ops {
		slices.Sort(s.latencies)
	}
	slices.Sort(r.all.latencies)
	if r.elapsed > 0 {
		r.throughput = float64(r.all.ok) / r.elapsed.Seconds()
	}
}

// opOf names the operation of a request from its method and URL (the
// targeter's shapes).
func opOf(method, raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "other"
	}
	path := strings.TrimPrefix(u.Path, apiBase)
	q := u.Query()
	switch {
	case method == "POST" && path == "/clients":
		return "create-client"
	case strings.HasPrefix(path, "/clients/"):
		return "get-client"
	case path == "/clients" && strings.HasPrefix(u.RawQuery, "search="):
		return "search-clients"
	case path == "/clients":
		return "list-clients"
	case strings.HasPrefix(path, "/invoices/"):
		return "get-invoice"
	case path == "/invoices" && strings.HasPrefix(u.RawQuery, "status=OVERDUE&"):
		return "list-invoices-overdue"
	case path == "/invoices" && q.Get("page") == "2000" && q.Get("pageSize") == "20":
		return "list-invoices-page2000"
	case path == "/invoices" && q.Get("pageSize") == "100":
		return "list-invoices-deep"
	case path == "/invoices" && (q.Has("status") || q.Has("type") || q.Has("from")):
		return "list-invoices-filter"
	case path == "/invoices":
		return "list-invoices"
	}
	return "other"
}

// percentile of sorted latencies (nearest rank).
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted))*p+0.999999) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func (r *benchReport) print(w io.Writer) {
	secs := r.elapsed.Seconds()
	fmt.Fprintf(w, "\n== %s: %d requests in %s, %.0f req/s, %.0f 2xx/s, transport errors %d\n",
		r.name, len(r.all.latencies), r.elapsed.Round(time.Millisecond), float64(len(r.all.latencies))/secs, r.throughput, r.transportErrors)
	if r.errorSample != "" {
		fmt.Fprintf(w, "   last transport error: %s\n", r.errorSample)
	}
	fmt.Fprintf(w, "%-22s %9s %9s %9s %9s %9s %9s  %s\n", "operation", "requests", "req/s", "p50", "p90", "p99", "max", "statuses")
	names := make([]string, 0, len(r.ops))
	for n := range r.ops {
		names = append(names, n)
	}
	slices.Sort(names)
	line := func(name string, s *opStats) {
		fmt.Fprintf(w, "%-22s %9d %9.0f %9s %9s %9s %9s  %s\n", name, len(s.latencies), float64(len(s.latencies))/secs,
			ms(percentile(s.latencies, .50)), ms(percentile(s.latencies, .90)), ms(percentile(s.latencies, .99)),
			ms(percentile(s.latencies, 1)), statusString(s.statuses))
	}
	for _, n := range names {
		line(n, r.ops[n])
	}
	line("all", r.all)
	r.cpu.print(w, len(r.all.latencies))
}

func ms(d time.Duration) string {
	return strconv.FormatFloat(float64(d.Microseconds())/1000, 'f', 2, 64) + "ms"
}

func statusString(m map[int]int) string {
	codes := make([]int, 0, len(m))
	for c := range m {
		codes = append(codes, c)
	}
	slices.Sort(codes)
	var parts []string
	for _, c := range codes {
		parts = append(parts, fmt.Sprintf("%d:%d", c, m[c]))
	}
	return strings.Join(parts, " ")
}

// printRSS reports a process's resident memory now and at its peak.
func printRSS(w io.Writer, pid int) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		fmt.Fprintf(w, "memory of pid %d: %v\n", pid, err)
		return
	}
	for _, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(l, "VmRSS:") || strings.HasPrefix(l, "VmHWM:") {
			fmt.Fprintf(w, "pid %d %s\n", pid, strings.Join(strings.Fields(l), " "))
		}
	}
}

// clockTick is the unit of utime and stime in /proc/PID/stat (USER_HZ, 100
// on every Linux this runs on).
const clockTick = 10 * time.Millisecond

// procCPU is a process's user and system CPU time so far.
func procCPU(pid int) (time.Duration, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces: count from after it.
	s := string(data)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: utime %q stime %q", pid, f[11], f[12])
	}
	return time.Duration(utime+stime) * clockTick, nil
}

// commCPU reads the CPU time of every process whose command name is comm
// (PostgreSQL's backends: one process per connection, and other clients'
// come and go). A reading is the sum of each process's growth since the
// reader's previous one, so it never goes back: a process that starts counts
// from zero, one that ends keeps what was counted before it ended (its last
// moments are lost), and a reused pid whose time went back counts as new.
func commCPU(comm string) func() (time.Duration, error) {
	return growth(func() (map[int]time.Duration, error) { return commProcs(comm) })
}

// growth turns readings of per-process CPU times (by pid) into one total that
// only grows; see commCPU.
func growth(read func() (map[int]time.Duration, error)) func() (time.Duration, error) {
	var last map[int]time.Duration
	var total time.Duration
	return func() (time.Duration, error) {
		now, err := read()
		if err != nil {
			return 0, err
		}
		for pid, t := range now {
			if before, ok := last[pid]; ok && t >= before {
				total += t - before
			} else {
				total += t
			}
		}
		last = now
		return total, nil
	}
}

// commProcs is the CPU time so far of each process whose command name is comm.
func commProcs(comm string) (map[int]time.Duration, error) {
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	procs := map[int]time.Duration{}
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		if c, _ := os.ReadFile("/proc/" + d.Name() + "/comm"); strings.TrimSpace(string(c)) != comm {
			continue
		}
		if t, err := procCPU(pid); err == nil {
			procs[pid] = t
		}
	}
	return procs, nil
}

// machineCPU is the machine's busy and idle time so far, all cores (the cpu
// line of /proc/stat; iowait counts as idle).
func machineCPU() (busy, idle time.Duration, err error) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, err
	}
	line, _, _ := strings.Cut(string(data), "\n")
	f := strings.Fields(line)
	if len(f) < 8 || f[0] != "cpu" {
		return 0, 0, fmt.Errorf("/proc/stat: %q", line)
	}
	var v [7]int64
	for i := range v {
		if v[i], err = strconv.ParseInt(f[i+1], 10, 64); err != nil {
			return 0, 0, fmt.Errorf("/proc/stat: %q", line)
		}
	}
	// user nice system idle iowait irq softirq
	return time.Duration(v[0]+v[1]+v[2]+v[5]+v[6]) * clockTick, time.Duration(v[3]+v[4]) * clockTick, nil
}

// cpuMeter adds up the CPU time of some processes over the measured loads of
// one report; a process it cannot read is left out (and said so).
type cpuMeter struct {
	names []string
	pids  []int // 0: not one process (read says what)
	reads []func() (time.Duration, error)
	used  []time.Duration
	start []time.Duration
}

func (m *cpuMeter) watch(name string, pid int) {
	if pid > 0 {
		m.add(name, pid, func() (time.Duration, error) { return procCPU(pid) })
	}
}

func (m *cpuMeter) add(name string, pid int, read func() (time.Duration, error)) {
	m.names, m.pids, m.reads = append(m.names, name), append(m.pids, pid), append(m.reads, read)
	m.used, m.start = append(m.used, 0), append(m.start, 0)
}

// watchAll adds, after the services' own processes, what shares the machine
// with them: the load tool itself, PostgreSQL's processes, and the machine's
// busy and idle time. Where the gateway's throughput trails the ceiling's
// by more than its own CPU explains, these lines say where the rest went.
func (m *cpuMeter) watchAll() {
	m.watch("load tool", os.Getpid())
	m.add("postgres (all its processes)", 0, commCPU("postgres"))
	// Busy and idle come from one reading of /proc/stat: busy is added
	// first, so begin and end read it first, and idle is that reading's.
	var idle time.Duration
	var idleErr error
	m.add("machine busy (all cores)", 0, func() (time.Duration, error) {
		var busy time.Duration
		busy, idle, idleErr = machineCPU()
		return busy, idleErr
	})
	m.add("machine idle (all cores)", 0, func() (time.Duration, error) { return idle, idleErr })
}

func (m *cpuMeter) begin() {
	for i, read := range m.reads {
		m.start[i], _ = read()
	}
}

func (m *cpuMeter) end() {
	for i, read := range m.reads {
		if now, err := read(); err == nil {
			m.used[i] += now - m.start[i]
		}
	}
}

// print reports each process's CPU per request of the report.
func (m *cpuMeter) print(w io.Writer, requests int) {
	for i, name := range m.names {
		if requests <= 0 {
			continue
		}
		per := float64(m.used[i].Microseconds()) / float64(requests)
		if m.pids[i] > 0 {
			fmt.Fprintf(w, "CPU per request, %s (pid %d): %.1f µs\n", name, m.pids[i], per)
		} else {
			fmt.Fprintf(w, "CPU per request, %s: %.1f µs\n", name, per)
		}
	}
}

// loadAverage is the machine's 1-minute load average, as /proc/loadavg says.
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Fields(string(data))[0]
}
