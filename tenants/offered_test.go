package tenants

import (
	"context"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
)

type offeredKey struct {
	company string
	mode    invoicing.Mode
	at      time.Duration // after t0
}

// take sums what TakeOffered gives, by company, mode and second after t0.
func take(l *Limiter, t0 time.Time) map[offeredKey]int {
	got := map[offeredKey]int{}
	l.TakeOffered(func(c string, m invoicing.Mode, sec int64, n, _ int, _ []uint16) {
		got[offeredKey{c, m, time.Duration(sec-t0.Unix()) * time.Second}] += n
	})
	return got
}

// Every decision counts its request for its company, mode and second,
// whoever decides it: the script (admitted or refused), a lease, the
// fallback.
func TestOfferedCountsEveryDecision(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb, mr := downableMiniredis(t)
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	clk := testenv.NewClock(t0)
	mr.SetTime(t0)
	l := newLimiter(Config{Redis: rdb, LiveDefault: Limit{Rate: 2, Burst: 2}, TestDefault: Limit{Rate: 1000, Burst: 1000},
		Now: clk.Now, Logger: discard(), CountOffered: true})
	offer := func(company string, m invoicing.Mode, n int) (admitted int) {
		for range n {
			d, err := l.Allow(ctx, company, m)
			if err != nil {
				t.Fatal(err)
			}
			if d.Allowed {
				admitted++
			}
		}
		return admitted
	}
	if a := offer("a", invoicing.Live, 5); a != 2 {
		t.Fatalf("%d of 5 admitted at 2/s burst 2", a)
	}
	offer("a", invoicing.Test, 50) // leased
	offer("b", invoicing.Live, 1)
	clk.Add(1500 * time.Millisecond)
	mr.SetTime(clk.Now())
	offer("a", invoicing.Live, 2)
	want := map[offeredKey]int{
		{"a", invoicing.Live, 0}: 5, {"a", invoicing.Test, 0}: 50, {"b", invoicing.Live, 0}: 1,
		{"a", invoicing.Live, time.Second}: 2,
	}
	if st := l.Stats(); st.AdmittedLeased == 0 {
		t.Fatalf("no decision from a lease: %+v", st)
	}
	assertOffered(t, "first take", take(l, t0), want)
	assertOffered(t, "taken again", take(l, t0), map[offeredKey]int{})
	// The rest of a second already given comes in a later take.
	offer("a", invoicing.Live, 3)
	assertOffered(t, "the rest of the second", take(l, t0), map[offeredKey]int{{"a", invoicing.Live, time.Second}: 3})
	// Redis gone: the fallback decides, and counts.
	mr.Close()
	clk.Add(time.Second)
	offer("a", invoicing.Live, 4)
	if st := l.Stats(); st.Fallback != 4 {
		t.Fatalf("%d decisions of the fallback, want 4", st.Fallback)
	}
	assertOffered(t, "in fallback", take(l, t0), map[offeredKey]int{{"a", invoicing.Live, 2 * time.Second}: 4})
}

// Without CountOffered nothing is counted; with it and nobody taking the
// counts, each state keeps at most maxOfferedSeconds seconds.
func TestOfferedStaysBounded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb, _ := testenv.Miniredis(t)
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	clk := testenv.NewClock(t0)
	off := newLimiter(Config{Redis: rdb, Now: clk.Now, Logger: discard()})
	on := newLimiter(Config{Redis: rdb, Prefix: "other:", Now: clk.Now, Logger: discard(), CountOffered: true})
	for range maxOfferedSeconds + 10 {
		for _, l := range []*Limiter{off, on} {
			if _, err := l.Allow(ctx, "a", invoicing.Live); err != nil {
				t.Fatal(err)
			}
		}
		clk.Add(time.Second)
	}
	if got := take(off, t0); len(got) != 0 {
		t.Errorf("counted without CountOffered: %v", got)
	}
	got := take(on, t0)
	if len(got) != maxOfferedSeconds+1 || on.Stats().OfferedDropped != 9 {
		t.Errorf("%d seconds kept, %d requests dropped; want %d and 9", len(got), on.Stats().OfferedDropped, maxOfferedSeconds+1)
	}
}

func assertOffered(t *testing.T, what string, got, want map[offeredKey]int) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: got %v, want %v", what, got, want)
		return
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("%s: got %v, want %v", what, got, want)
			return
		}
	}
}

// offeredSecond is what TakeOffered gives of one second, summed.
type offeredSecond struct {
	n, refused int
	slots      [Slots]int
}

func takeSeconds(l *Limiter, t0 time.Time) map[offeredKey]offeredSecond {
	got := map[offeredKey]offeredSecond{}
	l.TakeOffered(func(c string, m invoicing.Mode, sec int64, n, refused int, slots []uint16) {
		k := offeredKey{c, m, time.Duration(sec-t0.Unix()) * time.Second}
		s := got[k]
		s.n += n
		s.refused += refused
		for i, v := range slots {
			s.slots[i] += int(v)
		}
		got[k] = s
	})
	return got
}

// Each decision's refusal is counted with its request, whoever decides it,
// and each request in the sixteenth of its second it came in.
func TestOfferedCountsRefusalsAndSixteenths(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb, mr := downableMiniredis(t)
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	clk := testenv.NewClock(t0)
	mr.SetTime(t0)
	l := newLimiter(Config{Redis: rdb, LiveDefault: Limit{Rate: 2, Burst: 2}, Now: clk.Now, Logger: discard(), CountOffered: true})
	offer := func(n int) (refused int) {
		for range n {
			d, err := l.Allow(ctx, "a", invoicing.Live)
			if err != nil {
				t.Fatal(err)
			}
			if !d.Allowed {
				refused++
			}
		}
		return refused
	}
	r := offer(5) // in the first sixteenth: 2 admitted, 3 refused by the script
	clk.Add(700 * time.Millisecond)
	mr.SetTime(clk.Now())
	r += offer(3) // in the twelfth: 1 admitted (0.7 s at 2/s), 2 refused
	got := takeSeconds(l, t0)[offeredKey{"a", invoicing.Live, 0}]
	want := offeredSecond{n: 8, refused: r}
	want.slots[0], want.slots[11] = 5, 3
	if r != 5 || got != want {
		t.Errorf("counted %+v, want %+v (%d refused)", got, want, r)
	}
	// The fallback's refusals too.
	mr.Close()
	clk.Add(time.Second)
	r = offer(4)
	got = takeSeconds(l, t0)[offeredKey{"a", invoicing.Live, time.Second}]
	if r == 0 || got.n != 4 || got.refused != r || got.slots[11] != 4 {
		t.Errorf("in fallback: counted %+v, want 4 offered, %d refused, in the twelfth sixteenth", got, r)
	}
}
