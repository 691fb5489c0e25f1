package tenants

import (
	"context"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/invoicing"
)

// A lease, step by step, on one instance: it starts at one token and doubles
// while it runs out before its TTL, up to the bound (0.1 s of the rate, half
// the burst); what is left when it expires is given back at the next refresh,
// and the bucket in Redis gets it back.
func TestLeaseGrowsAndGivesBack(t *testing.T) {
	t.Parallel()
	// A TTL shorter than the 327 ms the leases below take from the bucket:
	// what is given back then shows in Redis.
	s := newSim(t, 1, Config{LiveDefault: Limit{Rate: 1000, Burst: 1000}, LeaseTTL: 250 * time.Millisecond})
	l := s.ls[0]
	for i := range 300 {
		d, err := l.Allow(context.Background(), "acme", invoicing.Live)
		if err != nil || !d.Allowed {
			t.Fatalf("request %d: %+v, %v", i, d, err)
		}
		// Remaining: the bucket as Redis left it, plus this instance's
		// unspent tokens; nothing refills (the clocks stand still).
		if d.Remaining != 1000-(i+1) {
			t.Fatalf("request %d: remaining %d, want %d", i, d.Remaining, 1000-(i+1))
		}
	}
	// Leases of 1, 2, 4, ..., 64, then 100 (0.1 s of the rate), twice: 327
	// tokens in 9 calls.
	st := l.Stats()
	if st.RedisCalls != 9 || st.AdmittedRedis != 9 || st.AdmittedLeased != 291 || st.TokensLeased != 318 {
		t.Errorf("after 300 requests: %+v; want 9 calls, 9 admitted by them, 291 from leases, 318 tokens leased", st)
	}
	ctx := context.Background()
	tat := func() float64 {
		v, err := s.ls[0].rdb.Get(ctx, tatKey("tenants:", "acme", invoicing.Live)).Float64()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	// 327 tokens taken at t0: the TAT is 327 ms ahead.
	if got, want := tat(), float64(s.t0.UnixMicro()+327_000); got != want {
		t.Errorf("TAT %.0f, want %.0f (327 tokens of 1 ms)", got, want)
	}
	// Past the TTL the 27 unspent tokens are not spent; the next request
	// gives them back in its refresh and takes a lease twice what the last
	// one saw spent (73), capped at the bound: the TAT is then 300+100
	// tokens after t0.
	s.at(260 * time.Millisecond)
	d, err := l.Allow(ctx, "acme", invoicing.Live)
	if err != nil || !d.Allowed || d.Leased {
		t.Fatalf("after the TTL: %+v, %v; want admitted by a refresh", d, err)
	}
	if st := l.Stats(); st.TokensReturned != 27 || st.RedisCalls != 10 {
		t.Errorf("after the TTL: %+v; want 27 tokens returned in the 10th call", st)
	}
	if got, want := tat(), float64(s.t0.UnixMicro()+400_000); got != want {
		t.Errorf("TAT %.0f, want %.0f", got, want)
	}
	if ls := &l.state("acme", invoicing.Live, s.clk.Now()).lease; ls.next != 146 || ls.granted != 100 {
		t.Errorf("lease after an expired one: next %d, granted %d; want 146 asked, 100 granted", ls.next, ls.granted)
	}
	// That one expires with one token spent: the next is two tokens.
	s.at(1100 * time.Millisecond)
	if _, err := l.Allow(ctx, "acme", invoicing.Live); err != nil {
		t.Fatal(err)
	}
	if ls := &l.state("acme", invoicing.Live, s.clk.Now()).lease; ls.next != 2 || ls.granted != 2 {
		t.Errorf("lease after a quiet one: next %d, granted %d; want 2 (twice the demand seen)", ls.next, ls.granted)
	}
}

// When the bucket cannot give the lease asked for, the instance spends what
// it got and then refuses locally, without asking Redis, until half the
// burst (or a lease span) has refilled; then it takes what accrued.
func TestLeaseShortBucketRefusesLocally(t *testing.T) {
	t.Parallel()
	lim := Limit{Rate: 1000, Burst: 100} // lease bound 50 (half the burst)
	s := newSim(t, 1, Config{LiveDefault: lim})
	l := s.ls[0]
	ctx := context.Background()
	admitted := 0
	var last Decision
	for range 200 {
		d, err := l.Allow(ctx, "acme", invoicing.Live)
		if err != nil {
			t.Fatal(err)
		}
		if d.Allowed {
			admitted++
		}
		last = d
	}
	// 1+2+4+8+16+32 = 63, then the 37 left of the burst.
	st := l.Stats()
	if admitted != lim.Burst || st.RedisCalls != 7 || st.RejectedLeased != 100 {
		t.Errorf("at once: %d admitted, %+v; want the burst in 7 calls, 100 refused locally", admitted, st)
	}
	if last.Allowed || !last.Leased || last.RetryAfter != 50*time.Millisecond || last.Remaining != 0 {
		t.Errorf("last refusal %+v; want a local one, retry after 50 ms (half the burst at 1000/s)", last)
	}
	s.at(49 * time.Millisecond)
	if d, _ := l.Allow(ctx, "acme", invoicing.Live); d.Allowed || l.Stats().RedisCalls != 7 {
		t.Errorf("49 ms later: %+v, %d calls; want still refused locally", d, l.Stats().RedisCalls)
	}
	s.at(50 * time.Millisecond)
	admitted = 0
	for range 100 {
		if d, _ := l.Allow(ctx, "acme", invoicing.Live); d.Allowed {
			admitted++
		}
	}
	// One call takes them, the next finds the bucket empty.
	if admitted != 50 || l.Stats().RedisCalls != 9 {
		t.Errorf("50 ms later: %d admitted, %d calls in all; want the 50 that refilled, in two more calls", admitted, l.Stats().RedisCalls)
	}
}

// A waiter that gives up leaves the queue; one already served keeps its
// decision.
func TestLeaseLeave(t *testing.T) {
	t.Parallel()
	var ls lease
	a, first := ls.join()
	b, second := ls.join()
	if !first || second || !ls.inflight {
		t.Fatalf("join: schedule %v then %v; want only the first to schedule", first, second)
	}
	ls.prepare(0)
	if ls.sent != 2 {
		t.Fatalf("sent %d, want 2", ls.sent)
	}
	if ls.leave(a) || len(ls.waiters) != 1 || ls.sent != 1 {
		t.Fatalf("after a left: %d waiting, %d sent", len(ls.waiters), ls.sent)
	}
	o, again := ls.complete(grant{tokens: 1, limit: Limit{Rate: 1, Burst: 1}, lmax: 1}, 0, time.Second)
	if again || o.admitted != 1 || !b.d.Allowed || !ls.leave(b) {
		t.Errorf("complete: %+v, again %v, b %+v", o, again, b.d)
	}
	select {
	case <-a.done:
		t.Error("the waiter that left was answered")
	default:
	}
}
