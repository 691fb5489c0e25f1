package backend_test

import (
	"context"
	"errors"
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

// Consecutive failures open the breaker; while open it refuses calls without
// touching the database, saying when to retry; Ping still sees the truth; a
// failed probe reopens it, a good one closes it.
func TestBreakerOpensFailsFastAndRecovers(t *testing.T) {
	ctx := context.Background()
	openFor := 700 * time.Millisecond
	s, proxy, changes := breakerStore(t, backend.Config{QueryTimeout: 2 * time.Second, BreakerFailures: 3, BreakerOpenFor: openFor})
	if _, err := s.GetClient(ctx, coA, cliCompany); err != nil {
		t.Fatal(err)
	}

	proxy.Cut()
	for i := range 3 {
		_, err := s.GetClient(ctx, coA, cliCompany)
		if !errors.Is(err, backend.ErrUnavailable) || errors.Is(err, backend.ErrCircuitOpen) {
			t.Fatalf("failure %d: %v, want ErrUnavailable from the database", i, err)
		}
	}
	if st := s.BreakerState(); st != "open" {
		t.Fatalf("after 3 failures: %s", st)
	}

	// Paused, the database would hold any call for the 2 s query timeout: a
	// refusal that comes back at once did not wait on it, and the pool handed
	// out no connection. (Not the proxy's count of connections: the pool may
	// still be dialing in the background for the calls that failed above, and
	// CI once saw such a dial land here.)
	proxy.Pause()
	seen := s.PoolStats().Acquires
	start := time.Now()
	_, err := s.ListInvoices(ctx, coA, invoicing.InvoiceFilter{Page: 1, PageSize: 10})
	took := time.Since(start)
	var open *backend.CircuitOpenError
	if !errors.As(err, &open) || !errors.Is(err, backend.ErrCircuitOpen) || !errors.Is(err, backend.ErrUnavailable) {
		t.Fatalf("while open: %v, want a CircuitOpenError matching ErrCircuitOpen and ErrUnavailable", err)
	}
	if ra := open.RetryAfter(); ra <= 0 || ra > openFor {
		t.Errorf("RetryAfter %v, want in (0, %v]", ra, openFor)
	}
	if n := s.PoolStats().Acquires - seen; took > 200*time.Millisecond || n != 0 {
		t.Errorf("open breaker took %v and %d connections from the pool: it waited on the database", took, n)
	}

	// Ping bypasses the breaker: with the database back it answers, while
	// calls are still refused until the next probe.
	proxy.Resume()
	if err := s.Ping(ctx); err != nil {
		t.Fatalf("Ping with the database back: %v", err)
	}
	if _, err := s.GetClient(ctx, coA, cliCompany); !errors.Is(err, backend.ErrCircuitOpen) {
		t.Fatalf("still within BreakerOpenFor: %v", err)
	}

	// A failed probe reopens the breaker at once.
	proxy.Cut()
	time.Sleep(openFor + 50*time.Millisecond)
	if _, err := s.GetClient(ctx, coA, cliCompany); !errors.Is(err, backend.ErrUnavailable) || errors.Is(err, backend.ErrCircuitOpen) {
		t.Fatalf("probe against a cut database: %v", err)
	}
	if st := s.BreakerState(); st != "open" {
		t.Fatalf("after a failed probe: %s", st)
	}

	// A good probe closes it.
	proxy.Resume()
	time.Sleep(openFor + 50*time.Millisecond)
	if _, err := s.GetClient(ctx, coA, cliCompany); err != nil {
		t.Fatalf("probe with the database back: %v", err)
	}
	if st := s.BreakerState(); st != "closed" {
		t.Fatalf("after a good probe: %s", st)
	}
	want := []string{"closed>open", "open>half-open", "half-open>open", "open>half-open", "half-open>closed"}
	if got := changes(); len(got) != len(want) || got[0] != want[0] || got[len(got)-1] != want[len(want)-1] {
		t.Errorf("state changes %v, want %v", got, want)
	}
}

// Answers to wrong requests and callers that give up never count: only the
// database failing does, and only in an unbroken run.
func TestBreakerCountsOnlyDatabaseFailures(t *testing.T) {
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
	start := time.Now()
	err = backend.SleepWithoutDeadline(ctx, s, 5)
	if !errors.Is(err, backend.ErrUnavailable) || time.Since(start) > 3*time.Second {
		t.Fatalf("pg_sleep(5) under a 200ms statement_timeout: %v after %v", err, time.Since(start))
	}
}
