package tenants

import (
	"fmt"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
)

func TestDecideLocal(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	ms := time.Millisecond
	lim := Limit{Rate: 10, Burst: 3}
	st := &state{}
	for i, step := range []struct {
		at        time.Duration
		allowed   bool
		remaining int
		retry     time.Duration
		reset     time.Duration
	}{
		{0, true, 2, 0, 100 * ms},
		{0, true, 1, 0, 200 * ms},
		{0, true, 0, 0, 300 * ms},
		{0, false, 0, 100 * ms, 300 * ms},
		{0, false, 0, 100 * ms, 300 * ms}, // a rejection takes nothing
		{50 * ms, false, 0, 50 * ms, 250 * ms},
		{100 * ms, true, 0, 0, 300 * ms},
		{1000 * ms, true, 2, 0, 100 * ms},
	} {
		d := st.decideLocal(t0.Add(step.at), lim)
		want := Decision{Allowed: step.allowed, Limit: lim, Remaining: step.remaining, RetryAfter: step.retry, Reset: step.reset, Local: true}
		if !approx(d, want) {
			t.Errorf("step %d at +%v: got %+v, want %+v", i, step.at, d, want)
		}
	}
	// A limit learnt later applies to the existing bucket: what is left of it
	// is capped at the new burst.
	low := Limit{Rate: 1, Burst: 1}
	for i, want := range []Decision{
		{Allowed: true, Limit: low, Reset: time.Second, Local: true},
		{Limit: low, RetryAfter: time.Second, Reset: time.Second, Local: true},
	} {
		if d := st.decideLocal(t0.Add(1000*ms), low); !approx(d, want) {
			t.Errorf("lowered, request %d: got %+v, want %+v", i, d, want)
		}
	}
}

// approx compares decisions to the microsecond: the local limiter works in
// float seconds.
func approx(a, b Decision) bool {
	near := func(x, y time.Duration) bool { return (x - y).Abs() < time.Microsecond }
	return a.Allowed == b.Allowed && a.Limit == b.Limit && a.Remaining == b.Remaining && a.Local == b.Local &&
		near(a.RetryAfter, b.RetryAfter) && near(a.Reset, b.Reset)
}

func TestStatesStayBounded(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	s := newStates()
	s.max = 100
	s.nextSweep.Store(t0.Add(time.Hour).UnixNano()) // no background sweep: the test calls it
	s.sweeping.Store(true)
	for i := range 50 {
		s.state(fmt.Sprint("old", i), invoicing.Live, t0)
	}
	for i := range 40 {
		s.state(fmt.Sprint("new", i), invoicing.Test, t0.Add(s.idle))
	}
	s.state("old0", invoicing.Live, t0.Add(s.idle)) // used again: kept
	s.sweep(t0.Add(s.idle + time.Second))
	if n := s.n.Load(); n != 41 {
		t.Errorf("after sweeping the idle: %d entries, want 41", n)
	}
	if _, ok := s.m.Load(stateKey{"old0", invoicing.Live}); !ok {
		t.Error("an entry in use was swept")
	}
	if _, ok := s.m.Load(stateKey{"old1", invoicing.Live}); ok {
		t.Error("an idle entry was kept")
	}
	now := t0.Add(s.idle + 2*time.Second)
	for i := range 200 {
		s.state(fmt.Sprint("flood", i), invoicing.Live, now)
	}
	s.sweep(now)
	if n, count := s.n.Load(), mapLen(s); n > s.max || n != count {
		t.Errorf("after a flood: counter %d, map %d entries; want equal and <= %d", n, count, s.max)
	}
}

func mapLen(s *states) (n int64) {
	s.m.Range(func(any, any) bool { n++; return true })
	return n
}

// The sweep runs by itself in the background once due.
func TestStatesSweepByThemselves(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	s := newStates()
	s.state("a", invoicing.Live, t0)
	later := t0.Add(s.idle + s.sweepEvery + time.Second)
	// A use at a later time starts the sweep in the background; wait for it
	// to have removed "a" (and to have finished).
	testenv.Eventually(t, "the idle entry a to be swept", func() error {
		s.state("b", invoicing.Live, later)
		if _, ok := s.m.Load(stateKey{"a", invoicing.Live}); ok || s.sweeping.Load() {
			return fmt.Errorf("%d entries, sweeping %v", mapLen(s), s.sweeping.Load())
		}
		return nil
	})
	if _, ok := s.m.Load(stateKey{"b", invoicing.Live}); !ok || mapLen(s) != 1 {
		t.Errorf("after the sweep: %d entries, want only the used one", mapLen(s))
	}
}
