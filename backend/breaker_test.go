package backend_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/backend"
	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
)

// breakerStore opens a PostgreSQL store with the fixtures, reached through a
// fault proxy, and records the breaker's state changes.
func breakerStore(t *testing.T, cfg backend.Config) (*backend.Store, *testenv.FaultProxy, func() []string) {
	t.Helper()
	url := postgresDB(false)(t)
	load(t, url, liveFixtures())
	proxy := testenv.PostgresProxy(t)
	var mu sync.Mutex
	var changes []string
	cfg.URL = proxy.Via(url)
	cfg.Now = func() time.Time { return fixedNow }
	cfg.OnBreakerChange = func(from, to string) {
		mu.Lock()
		changes = append(changes, from+">"+to)
		mu.Unlock()
	}
	s, err := backend.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s, proxy, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), changes...)
	}
}

// breakerClock is the breakers' clock in these tests: they move it instead
// of sleeping until a probe is due.
func breakerClock(cfg *backend.Config) *testenv.Clock {
	c := testenv.NewClock(time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC))
	cfg.BreakerNow = c.Now
	return c
}

// refusedFor asserts that a call is refused by the open breaker, without
// touching the database, and returns when the refusal says to retry.
func refusedFor(t *testing.T, s *backend.Store) time.Duration {
	t.Helper()
	_, err := s.GetClient(context.Background(), coA, cliCompany)
	var open *backend.CircuitOpenError
	if !errors.As(err, &open) || !errors.Is(err, backend.ErrCircuitOpen) || !errors.Is(err, backend.ErrUnavailable) {
		t.Fatalf("want a CircuitOpenError matching ErrCircuitOpen and ErrUnavailable; got %v", err)
	}
	return open.RetryAfter()
}

// probeFails asserts that a call goes to the (cut) database and fails there.
func probeFails(t *testing.T, s *backend.Store) {
	t.Helper()
	if _, err := s.GetClient(context.Background(), coA, cliCompany); !errors.Is(err, backend.ErrUnavailable) || errors.Is(err, backend.ErrCircuitOpen) {
		t.Fatalf("want the database's failure, not the breaker's refusal; got %v", err)
	}
}

// Consecutive failures open the breaker; while open it refuses calls without
// touching the database, saying when its probe is due; Ping still sees the
// truth; a failed probe reopens it, a good one closes it.
func TestBreakerOpensFailsFastAndRecovers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg := backend.Config{QueryTimeout: 2 * time.Second, BreakerFailures: 3, BreakerFirstProbe: 400 * time.Millisecond}
	clock := breakerClock(&cfg)
	s, proxy, changes := breakerStore(t, cfg)
	if _, err := s.GetClient(ctx, coA, cliCompany); err != nil {
		t.Fatal(err)
	}

	proxy.Cut()
	for range 3 {
		probeFails(t, s)
	}
	if st := s.BreakerState(); st != "open" {
		t.Fatalf("after 3 failures: %s", st)
	}

	// Paused, the database would hold any call for the 2 s query timeout: a
	// refusal for which the pool handed out no connection did not wait on
	// it. (Not the proxy's count of connections: the pool may still be
	// dialing in the background for the calls that failed above, and CI once
	// saw such a dial land here.)
	proxy.Pause()
	seen := s.PoolStats().Acquires
	if ra := refusedFor(t, s); ra != 400*time.Millisecond {
		t.Errorf("RetryAfter %v just after opening, want the first probe's 400ms", ra)
	}
	if n := s.PoolStats().Acquires - seen; n != 0 {
		t.Errorf("open breaker took %d connections from the pool: it waited on the database", n)
	}
	clock.Add(300 * time.Millisecond)
	if ra := refusedFor(t, s); ra != 100*time.Millisecond {
		t.Errorf("RetryAfter %v 300ms after opening, want 100ms", ra)
	}

	// Ping bypasses the breaker: with the database back it answers, while
	// calls are still refused until the probe is due.
	proxy.Resume()
	if err := s.Ping(ctx); err != nil {
		t.Fatalf("Ping with the database back: %v", err)
	}
	refusedFor(t, s)

	// A failed probe reopens the breaker at once, for twice as long.
	proxy.Cut()
	clock.Add(100 * time.Millisecond)
	probeFails(t, s)
	if st := s.BreakerState(); st != "open" {
		t.Fatalf("after a failed probe: %s", st)
	}
	if ra := refusedFor(t, s); ra != 800*time.Millisecond {
		t.Errorf("RetryAfter %v after a failed probe, want 800ms", ra)
	}

	// A good probe closes it.
	proxy.Resume()
	clock.Add(800 * time.Millisecond)
	if _, err := s.GetClient(ctx, coA, cliCompany); err != nil {
		t.Fatalf("probe with the database back: %v", err)
	}
	if st := s.BreakerState(); st != "closed" {
		t.Fatalf("after a good probe: %s", st)
	}
	want := "[closed>open open>half-open half-open>open open>half-open half-open>closed]"
	if got := fmt.Sprint(changes()); got != want {
		t.Errorf("state changes %v, want %v", got, want)
	}
}

// The wait before a probe starts short and doubles with each failed probe up
// to BreakerOpenFor, so that a short outage is seen by clients for little
// more than it lasts and a long one costs the database one call per
// BreakerOpenFor; an answer resets it.
func TestBreakerProbesSoonThenBacksOff(t *testing.T) {
	t.Parallel()
	cfg := backend.Config{QueryTimeout: 2 * time.Second, BreakerFailures: 2, BreakerOpenFor: 3 * time.Second}
	clock := breakerClock(&cfg)
	s, proxy, _ := breakerStore(t, cfg)
	proxy.Cut()
	probeFails(t, s)
	probeFails(t, s)

	var waits []time.Duration
	for range 6 {
		ra := refusedFor(t, s)
		waits = append(waits, ra)
		clock.Add(ra - time.Millisecond)
		if got := refusedFor(t, s); got != time.Millisecond {
			t.Fatalf("1ms before the probe: RetryAfter %v", got)
		}
		clock.Add(time.Millisecond)
		probeFails(t, s)
	}
	want := "[250ms 500ms 1s 2s 3s 3s]" // the default first probe, doubled, at most BreakerOpenFor
	if got := fmt.Sprint(waits); got != want {
		t.Errorf("waits before each probe %s, want %s", got, want)
	}

	// The database back: the probe that is due closes the breaker, and the
	// next outage starts again from the first wait.
	proxy.Resume()
	clock.Add(refusedFor(t, s))
	if _, err := s.GetClient(context.Background(), coA, cliCompany); err != nil {
		t.Fatalf("probe with the database back: %v", err)
	}
	proxy.Cut()
	probeFails(t, s)
	probeFails(t, s)
	if ra := refusedFor(t, s); ra != 250*time.Millisecond {
		t.Errorf("after recovering, the next outage's first wait is %v, want 250ms", ra)
	}
}

// While a probe is in flight, other calls are refused at once (RetryAfter 0:
// the gateway says 1 s); a probe whose caller leaves does not count, and
// the next call probes instead.
func TestBreakerOneProbeAtATime(t *testing.T) {
	t.Parallel()
	cfg := backend.Config{QueryTimeout: 2 * time.Second, BreakerFailures: 1}
	clock := breakerClock(&cfg)
	halfOpen := make(chan struct{}, 4)
	cfg.OnBreakerChange = func(_, to string) {
		if to == "half-open" {
			halfOpen <- struct{}{}
		}
	}
	url := postgresDB(false)(t)
	load(t, url, liveFixtures())
	proxy := testenv.PostgresProxy(t)
	cfg.URL, cfg.Now = proxy.Via(url), func() time.Time { return fixedNow }
	s, err := backend.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)

	proxy.Cut()
	probeFails(t, s)
	proxy.Pause()
	clock.Add(refusedFor(t, s))
	ctx, cancel := context.WithCancel(context.Background())
	probe := make(chan error, 1)
	go func() {
		_, err := s.GetClient(ctx, coA, cliCompany)
		probe <- err
	}()
	<-halfOpen // the probe's own call turned the breaker half-open, and holds it
	if ra := refusedFor(t, s); ra != 0 {
		t.Errorf("with a probe in flight: RetryAfter %v, want 0", ra)
	}
	cancel()
	if err := <-probe; err == nil {
		t.Fatal("a probe against a paused database succeeded")
	}
	if st := s.BreakerState(); st != "half-open" {
		t.Fatalf("after the probe's caller left: %s, want half-open", st)
	}
	proxy.Resume()
	if _, err := s.GetClient(context.Background(), coA, cliCompany); err != nil {
		t.Fatalf("the next call, as the probe: %v", err)
	}
	if st := s.BreakerState(); st != "closed" {
		t.Fatalf("after a good probe: %s", st)
	}
}

// Answers to wrong requests and callers that give up never count: only the
// database failing does, and only in an unbroken run.
func TestBreakerCountsOnlyDatabaseFailures(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, proxy, _ := breakerStore(t, backend.Config{QueryTimeout: 2 * time.Second, BreakerFailures: 2, BreakerOpenFor: time.Minute})
	const unknown = "99000000-0000-4000-8000-000000000099"
	nif := "5417009999"
	if _, err := s.CreateClient(ctx, coW, invoicing.NewClient{Name: "Primeiro", NIF: &nif}); err != nil {
		t.Fatal(err)
	}
	for range 10 {
		if _, err := s.GetClient(ctx, coA, unknown); !errors.Is(err, backend.ErrNotFound) {
			t.Fatalf("unknown client: %v", err)
		}
		if _, err := s.GetClient(ctx, "not-a-uuid", cliCompany); !errors.Is(err, backend.ErrNotFound) {
			t.Fatalf("malformed company: %v", err)
		}
		if _, err := s.GetInvoice(ctx, coA, unknown); !errors.Is(err, backend.ErrNotFound) {
			t.Fatalf("unknown invoice: %v", err)
		}
		if _, err := s.CreateClient(ctx, coW, invoicing.NewClient{Name: "Outro", NIF: &nif}); !errors.Is(err, backend.ErrNIFConflict) {
			t.Fatalf("duplicate NIF: %v", err)
		}
		if _, err := s.ListClients(ctx, coA, invoicing.ClientFilter{Page: 1, PageSize: 101}); !errors.Is(err, backend.ErrInvalid) {
			t.Fatalf("page too large: %v", err)
		}
		if _, err := s.ListInvoices(ctx, coA, invoicing.InvoiceFilter{Status: "LOST", Page: 1, PageSize: 1}); !errors.Is(err, backend.ErrInvalid) {
			t.Fatalf("bad status: %v", err)
		}
	}
	if st := s.BreakerState(); st != "closed" {
		t.Fatalf("after client errors: %s", st)
	}

	// Callers leaving (canceled, or their own deadline) while the database
	// hangs: many failures, none counted.
	proxy.Pause()
	for i := range 4 {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
		if i%2 == 0 {
			cctx, cancel = context.WithCancel(ctx)
			time.AfterFunc(30*time.Millisecond, cancel)
		}
		_, err := s.Company(cctx, coA)
		cancel()
		if err == nil {
			t.Fatal("a call against a paused database succeeded")
		}
	}
	if st := s.BreakerState(); st != "closed" {
		t.Fatalf("after callers gave up: %s", st)
	}

	// failure, answer, failure: the answer breaks the run.
	proxy.Cut()
	fail := func() {
		t.Helper()
		if _, err := s.GetClient(ctx, coA, cliCompany); !errors.Is(err, backend.ErrUnavailable) {
			t.Fatalf("cut: %v", err)
		}
	}
	fail()
	proxy.Resume()
	if _, err := s.GetClient(ctx, coA, unknown); !errors.Is(err, backend.ErrNotFound) {
		t.Fatalf("resumed: %v", err)
	}
	proxy.Cut()
	fail()
	if st := s.BreakerState(); st != "closed" {
		t.Fatalf("failures not in a row opened the breaker: %s", st)
	}
	fail()
	if st := s.BreakerState(); st != "open" {
		t.Fatalf("two failures in a row: %s", st)
	}
}

// QueryTimeout is PostgreSQL's statement_timeout too (rounded up to whole
// milliseconds: a sub-millisecond one must not become 0, which means none), and the server enforces it
// even on a call without a client deadline.
func TestStatementTimeout(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := postgresDB(false)(t)
	for _, c := range []struct {
		timeout time.Duration
		want    string
	}{{1500 * time.Millisecond, "1500ms"}, {1234500 * time.Microsecond, "1235ms"}, {0, "2s"}} {
		s, err := backend.Open(ctx, backend.Config{URL: url, QueryTimeout: c.timeout})
		if err != nil {
			t.Fatal(err)
		}
		got, err := backend.StatementTimeout(ctx, s)
		s.Close()
		if err != nil || got != c.want {
			t.Errorf("QueryTimeout %v: statement_timeout %q (%v), want %q", c.timeout, got, err, c.want)
		}
	}
	s, err := backend.Open(ctx, backend.Config{URL: url, QueryTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// Without a deadline of its own, only statement_timeout can end the
	// sleep with an error: without it, it would succeed after 5 s.
	err = backend.SleepWithoutDeadline(ctx, s, 5)
	if !errors.Is(err, backend.ErrUnavailable) {
		t.Fatalf("pg_sleep(5) under a 200ms statement_timeout: %v, want ErrUnavailable", err)
	}
}
