package gateway_test

import (
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/backend"
	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
)

// The databases' circuit breakers end to end, on the breakers' own clock
// (backend.Config.BreakerNow), which the tests move instead of sleeping: a
// probe is due when the test says, however slow the machine. The query
// timeouts stay real.

// breakerClock sets the breakers' clock.
func breakerClock(clock *testenv.Clock) func(*backend.Config) {
	return func(c *backend.Config) { c.BreakerNow = clock.Now }
}

// retryAfter is a 503's Retry-After, as a client would wait it.
func retryAfter(t *testing.T, h hit) time.Duration {
	t.Helper()
	n, err := strconv.Atoi(h.retryAfter)
	if err != nil || n < 1 {
		t.Fatalf("no Retry-After of at least 1 s: %v", h)
	}
	return time.Duration(n) * time.Second
}

// PostgreSQL paused (connections open, no answers): concurrent requests end
// with 503 at the query timeout instead of hanging; the breaker then opens
// and answers at once with Retry-After = the time until its next probe;
// while its probe is in flight, other requests are refused at once too; a
// failed probe doubles the wait; resuming recovers at the next probe.
func TestPostgresPaused(t *testing.T) {
	// Not parallel: it measures answer times against the query timeout,
	// which other tests' load on the machine's cores would stretch.
	w := newWorld(t)
	proxy := testenv.PostgresProxy(t)
	clock := testenv.NewClock(time.Now())
	// Long enough for a new connection on a busy machine: the probe after
	// the pause opens one, through the same deadline.
	timeout := time.Second
	in := w.start(viaProxy(proxy, timeout, 3, 4*time.Second, breakerClock(clock),
		func(c *backend.Config) { c.BreakerFirstProbe = 1500 * time.Millisecond })) // Retry-After 2, rounded up
	k := in.key(t, coA, invoicing.Live, allScopes)
	url := in.pub.URL + "/api/v1/v1/clients/" + firstClient(t, in.live)
	get := func() hit { return send("GET", url, k.Key, coA, "") }
	if h := get(); h.status != 200 {
		t.Fatalf("before the pause: %v", h)
	}

	proxy.Pause()
	var wg sync.WaitGroup
	hits := make([]hit, 4)
	for i := range hits {
		wg.Add(1)
		go func() { defer wg.Done(); hits[i] = get() }()
	}
	wg.Wait()
	for _, h := range hits {
		checkUnavailable(t, h, 1)
		if h.took > timeout+700*time.Millisecond {
			t.Errorf("a request against a paused database took %v; the query timeout is %v", h.took, timeout)
		}
	}
	if st := in.live.BreakerState(); st != "open" {
		t.Fatalf("breaker %s after 4 timeouts, want open", st)
	}
	h := get()
	checkUnavailable(t, h, 2)
	if h.retryAfter != "2" || h.took >= timeout {
		t.Errorf("open breaker: %v; want Retry-After 2 (the first probe, 1.5 s, rounded up), at once", h)
	}

	// Half-open: one probe goes to the (still paused) database; a request
	// meanwhile is refused at once, told to retry in 1 s.
	clock.Add(1500 * time.Millisecond)
	acquires := noConnectionOpening(t, in.live)
	probe := make(chan hit, 1)
	go func() { probe <- get() }()
	probeInFlight(t, in.live, acquires)
	other := get()
	first := <-probe
	for _, h := range []hit{first, other} {
		checkUnavailable(t, h, 1)
	}
	if min(first.took, other.took) >= timeout {
		t.Errorf("with a probe in flight, no request was refused at once: %v, %v", first, other)
	}
	if st := in.live.BreakerState(); st != "open" {
		t.Fatalf("breaker %s after a failed probe, want open", st)
	}
	if h := get(); h.retryAfter != "3" {
		t.Errorf("after a failed probe: %v; want Retry-After 3 (twice the first wait)", h)
	}

	proxy.Resume()
	clock.Add(3 * time.Second)
	if h := get(); h.status != 200 {
		t.Fatalf("at the next probe with the database back: %v", h)
	}
}

// A short PostgreSQL outage is seen by a client for little more than it
// lasts: the breaker probes soon after opening, and a client that waits each
// Retry-After it is given is served at its first retry after the database
// is back (a fixed 5 s open time would make a 3 s cut a 5 s outage). Time is
// the breaker's clock, moved by the client's waits.
func TestPostgresShortCutSeenForLittleMore(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	proxy := testenv.PostgresProxy(t)
	clock := testenv.NewClock(time.Now())
	in := w.start(viaProxy(proxy, 2*time.Second, 5, 5*time.Second, breakerClock(clock))) // the shipped breaker
	k := in.key(t, coA, invoicing.Live, allScopes)
	url := in.pub.URL + "/api/v1/v1/clients/" + firstClient(t, in.live)
	get := func() hit { return send("GET", url, k.Key, coA, "") }

	const cut = 3 * time.Second
	proxy.Cut()
	cutAt := clock.Now()
	for range 5 { // other clients' requests, at once: they open the breaker
		checkUnavailable(t, get(), 1)
	}
	if st := in.live.BreakerState(); st != "open" {
		t.Fatalf("breaker %s after 5 failures, want open", st)
	}
	var waits []string
	for {
		if clock.Now().Sub(cutAt) >= cut {
			proxy.Resume()
		}
		h := get()
		if h.status == 200 {
			break
		}
		checkUnavailable(t, h, 5)
		waits = append(waits, h.retryAfter)
		if len(waits) > 20 {
			t.Fatalf("not served after %v: %v", clock.Now().Sub(cutAt), h)
		}
		clock.Add(retryAfter(t, h))
	}
	seen := clock.Now().Sub(cutAt)
	t.Logf("a %v cut seen for %v by a client told to wait %v s", cut, seen, waits)
	if seen > cut+time.Second {
		t.Errorf("a %v cut was seen for %v (Retry-After %v), want at most 1 s more", cut, seen, waits)
	}
}

// opening is how many connections of p are being opened.
func opening(p backend.PoolStats) int { return p.TotalConns - p.IdleConns - p.InUseConns }

// noConnectionOpening waits until no connection of st is being opened (a
// dial the paused database holds ends at its timeout) and returns how many
// connections the pool has handed out so far.
func noConnectionOpening(t *testing.T, st *backend.Store) (acquires int64) {
	t.Helper()
	testenv.Eventually(t, "no connection being opened", func() error {
		if p := st.PoolStats(); opening(p) != 0 {
			return fmt.Errorf("pool %+v", p)
		}
		return nil
	})
	return st.PoolStats().Acquires
}

// probeInFlight waits, after noConnectionOpening, until a request of the
// test takes a connection of st, idle or new: the breaker admitted it as
// its probe (a connection is taken only past the breaker).
func probeInFlight(t *testing.T, st *backend.Store, acquires int64) {
	t.Helper()
	testenv.Eventually(t, "the probe to take a connection", func() error {
		if p := st.PoolStats(); opening(p) == 0 && p.Acquires == acquires {
			return fmt.Errorf("pool %+v", p)
		}
		return nil
	})
}
