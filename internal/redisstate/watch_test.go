package redisstate_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/invoicing-ao/gateway/internal/redisstate"
	"github.com/invoicing-ao/gateway/internal/testenv"
)

// The watcher reads Redis again each minute of its clock (the test's
// timer), tells each reading to OnReport, keeps the last for the metrics,
// and reads again sooner while Redis cannot be reached.
func TestWatcher(t *testing.T) {
	t.Parallel()
	s := testenv.StartRedisServer(t, 0)
	rdb := client(t, &redis.Options{Addr: s.Addr(), MaxRetries: -1})
	clock := testenv.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	waits, ticks := make(chan time.Duration, 1), make(chan time.Time)
	reports := make(chan redisstate.Report, 1)
	reg := prometheus.NewRegistry()
	w, err := redisstate.NewWatcher(redisstate.Config{Source: redisstate.Source{Redis: rdb, Topology: redisstate.Single, Label: s.Addr()},
		After:    func(d time.Duration) <-chan time.Time { waits <- d; return ticks },
		Now:      clock.Now,
		OnReport: func(_, after redisstate.Report) { reports <- after },
		Metrics:  reg, WaitFor: func() int { return 1 }})
	if err != nil {
		t.Fatal(err)
	}
	if got := w.Last(); !got.At.IsZero() || got.Check(redisstate.Persistence).State != redisstate.Unknown {
		t.Fatalf("before the first reading: %+v", got)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first := w.Check(ctx)
	if r := <-reports; verdicts(r) != verdicts(first) || !r.At.Equal(clock.Now()) {
		t.Fatalf("OnReport got %s at %v, Check answered %s", verdicts(r), r.At, verdicts(first))
	}
	expect := func(want string) {
		t.Helper()
		if got := gathered(t, reg); got != want {
			t.Errorf("metrics:\n%s\nwant:\n%s", got, want)
		}
	}
	expect(metrics("at_risk", "ok", "at_risk", "0"))

	done := make(chan struct{})
	go func() { defer close(done); w.Run(ctx) }()
	step := func(want time.Duration) redisstate.Report {
		t.Helper()
		if d := <-waits; d != want {
			t.Fatalf("waits %v, want %v", d, want)
		}
		clock.Add(want)
		ticks <- clock.Now()
		return <-reports
	}
	// The operator turns AOF on: seen at the next reading, a minute later.
	if err := rdb.ConfigSet(ctx, "appendonly", "yes").Err(); err != nil {
		t.Fatal(err)
	}
	if r := step(time.Minute); r.Check(redisstate.Persistence).Value != "aof" {
		t.Fatalf("a minute later: %s", verdicts(r))
	}
	expect(metrics("ok", "ok", "at_risk", "0"))
	s.Kill()
	if r := step(time.Minute); r.Err == nil {
		t.Fatalf("with Redis down: %s, no error", verdicts(r))
	}
	expect(metrics("unknown", "unknown", "unknown", ""))
	step(5 * time.Second) // while down, sooner
	cancel()
	<-done
}

// metrics is what gathered says of the three checks' states, the replicas
// online (none: absent) and the wait.
func metrics(persistence, eviction, replicas, online string) string {
	var out []string
	out = append(out, "gateway_redis_changes_wait_replicas 1")
	for _, c := range []struct{ name, state string }{{"eviction", eviction}, {"persistence", persistence}, {"replicas", replicas}} {
		for _, st := range []string{"at_risk", "ok", "unknown"} {
			v := "0"
			if st == c.state {
				v = "1"
			}
			out = append(out, "gateway_redis_durability{check="+c.name+",state="+st+"} "+v)
		}
	}
	if online != "" {
		out = append(out, "gateway_redis_replicas "+online)
	}
	return strings.Join(out, "\n")
}

// gathered is the registry's gauges of the three families, one per line,
// in name and label order.
func gathered(t *testing.T, reg *prometheus.Registry) string {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, mf := range mfs {
		switch mf.GetName() {
		case "gateway_redis_durability", "gateway_redis_replicas", "gateway_redis_changes_wait_replicas":
		default:
			continue
		}
		for _, m := range mf.GetMetric() {
			line := mf.GetName()
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			if len(labels) > 0 {
				line += "{" + strings.Join(labels, ",") + "}"
			}
			out = append(out, line+" "+strconv.FormatFloat(m.GetGauge().GetValue(), 'g', -1, 64))
		}
	}
	return strings.Join(out, "\n")
}
