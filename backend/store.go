package backend

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/invoicing-ao/gateway/invoicing"
	"go.opentelemetry.io/otel/trace"
)

// Config selects and tunes one database (one key mode).
type Config struct {
	// URL is "postgres://..." (or "postgresql://...") for PostgreSQL through a
	// pgx pool, or "sqlite:PATH" for an embedded SQLite file, created if
	// missing. Required.
	URL string
	// MaxConns is the pool size; zero means 10.
	MaxConns int
	// QueryTimeout bounds every database call (and is PostgreSQL's
	// statement_timeout); zero means 2s. A caller's earlier deadline wins.
	QueryTimeout time.Duration
	// Now is the clock that decides "today" for the derived OVERDUE status and
	// stamps created clients, and ages kept totals; nil means time.Now.
	Now func() time.Time
	// TotalMaxAge bounds how old the total of a large list may be: lists
	// matching at least ExactTotalBelow rows are counted at most once per
	// TotalMaxAge/2 and their total is never served older than TotalMaxAge
	// (counts.go). Zero means 10s; negative means every total is exact.
	TotalMaxAge time.Duration
	// ExactTotalBelow is the size under which a list is counted on every
	// request; zero means 10,000.
	ExactTotalBelow int64
	// SearchExactBelow is the same for a client search (a fragment of a name
	// or NIF), whose exact count reads every match from the table (a trigram
	// index only names candidates): 13-30 ms for 5,000 matches, where the
	// page costs under one. Below it, a search's page is also read from its
	// matches rather than walked in the list's order (order.go). Zero means
	// 1,000; never more than ExactTotalBelow.
	SearchExactBelow int64
	// BookmarkFrom is the offset from which a page of a list of at least
	// ExactTotalBelow matches may start from a bookmark instead of an OFFSET
	// walk (bookmarks.go); zero means 1,000. Bookmarks live TotalMaxAge (none
	// when it is negative).
	BookmarkFrom int

	// TracerProvider makes a span of each statement run under a recording
	// span; nil means otel's global one.
	TracerProvider trace.TracerProvider

	// BreakerFailures is how many consecutive failed calls (unreachable, or
	// past QueryTimeout) open the circuit breaker; zero means 5.
	BreakerFailures int
	// BreakerFirstProbe is how long a breaker that has just opened refuses
	// calls (with ErrCircuitOpen, without touching the database) before it
	// lets one probe through; each failed probe doubles the wait, up to
	// BreakerOpenFor, and an answer resets it (breaker.go). Zero means
	// 250ms; never more than BreakerOpenFor.
	BreakerFirstProbe time.Duration
	// BreakerOpenFor is the longest an open breaker waits between probes;
	// zero means 5s.
	BreakerOpenFor time.Duration
	// BreakerNow is the breaker's clock; nil means time.Now.
	BreakerNow func() time.Time
	// OnBreakerChange, when set, is told each state change of the breaker
	// ("closed", "open", "half-open"). It runs under the breaker's lock: it
	// must be quick and must not call the Store.
	OnBreakerChange func(from, to string)

	// ReplicaURL is a read replica of URL, same engine: reads go to it,
	// writes to URL, with read-your-writes for created clients (replica.go).
	// Empty means none.
	ReplicaURL string
	// ChangesSettle is how far behind the clock a list of changes
	// (UpdatedSince) stops, so that a row committed late with an earlier
	// updated_at is not skipped by a sync that read past it; zero means 5s.
	ChangesSettle time.Duration

	// ReadYourWritesWindow is how long after a company created a client
	// through this Store its client lists are read from the primary; zero
	// means 5s. Used only with ReplicaURL.
	ReadYourWritesWindow time.Duration

	// Lazy makes Open return the Store without first asking the database:
	// a database that cannot be reached yet fails each call with
	// ErrUnavailable (then the breaker's fast refusals) until it answers,
	// and the Store recovers alone. False means Open pings and fails. A
	// server that must start during an outage sets it; a tool that needs the
	// database now leaves it off, to say at once what is wrong.
	Lazy bool
}

// Store serves the API's resources from one database (and its read
// replica, if any): the reads and the one write (CreateClient) of the
// public API, the companies the admin API finds, and the state of the
// connections (Ping, PoolStats, Collector). It is safe for concurrent
// use. What changed, for the events' detector, is Changes' (changes.go),
// over the same connections: a background reader with rules of its own.
type Store struct {
	*core
	changes *Changes
}

// core is what the Store and its Changes share: the connections and their
// dialect, the breaker, the clock and the deadline, the counts, and the
// Store's own writes in flight (which the detector must see).
type core struct {
	db      conns // primary and replica, each traced (replica.go)
	d       *dialect
	q       queries
	timeout time.Duration
	now     func() time.Time
	counts  *countCache
	marks   *bookmarks // nil: every page by OFFSET
	breaker *breaker
	settle  time.Duration // Config.ChangesSettle
	// searchExact is Config.SearchExactBelow.
	searchExact int64
	writing     pendingWrites // this Store's own changes being written (inflight.go)
}

// dbConn is the little the Store needs of a driver; pgx and database/sql each
// implement it (postgres.go, sqlite.go).
type dbConn interface {
	query(ctx context.Context, sql string, args ...any) (rowIter, error)
	exec(ctx context.Context, sql string, args ...any) (rowsAffected int64, err error)
	ping(ctx context.Context) error
	close()
	// classify maps a driver error to a sentinel (ErrUnavailable,
	// ErrNIFConflict, ErrNotFound) or returns nil when it is none of them.
	classify(err error) error
}

type rowIter interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close()
}

// The defaults of Config's pool and deadline (the breaker's and the
// replica's are beside them: breaker.go, replica.go).
const (
	DefaultMaxConns     = 10
	DefaultQueryTimeout = 2 * time.Second
)

// Check refuses what Open would not take of cfg's sizes and durations (a
// negative one: zero is the default), each as an *invoicing.SettingError
// naming the Config field, all at once. It reads neither URL: their forms
// are Open's to try. A configuration is checked with it when it is loaded.
func (cfg Config) Check() error {
	var errs []error
	for _, f := range []struct {
		name string
		bad  bool
		def  any
	}{
		{"MaxConns", cfg.MaxConns < 0, DefaultMaxConns},
		{"QueryTimeout", cfg.QueryTimeout < 0, DefaultQueryTimeout},
		{"BreakerFailures", cfg.BreakerFailures < 0, DefaultBreakerFailures},
		{"BreakerFirstProbe", cfg.BreakerFirstProbe < 0, defaultBreakerFirstProbe},
		{"BreakerOpenFor", cfg.BreakerOpenFor < 0, DefaultBreakerOpenFor},
		{"ChangesSettle", cfg.ChangesSettle < 0, defaultChangesSettle},
		{"ReadYourWritesWindow", cfg.ReadYourWritesWindow < 0, DefaultReadYourWritesWindow},
	} {
		if f.bad {
			errs = append(errs, invoicing.InvalidSetting("backend", f.name, "must not be negative (zero means %v)", f.def))
		}
	}
	return errors.Join(errs...)
}

// Open connects to the database of cfg.URL and pings it, unless cfg.Lazy. A
// database that cannot be reached gives an error wrapping ErrUnavailable
// (the driver's error beside it: the host and the server's own message).
// What Check refuses, Open refuses.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	if cfg.MaxConns == 0 {
		cfg.MaxConns = DefaultMaxConns
	}
	if cfg.QueryTimeout == 0 {
		cfg.QueryTimeout = DefaultQueryTimeout
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.TotalMaxAge == 0 {
		cfg.TotalMaxAge = defaultTotalMaxAge
	}
	if cfg.ExactTotalBelow <= 0 {
		cfg.ExactTotalBelow = defaultExactTotalBelow
	}
	if cfg.SearchExactBelow <= 0 {
		cfg.SearchExactBelow = defaultSearchExactBelow
	}
	cfg.SearchExactBelow = min(cfg.SearchExactBelow, cfg.ExactTotalBelow)
	if cfg.ChangesSettle <= 0 {
		cfg.ChangesSettle = defaultChangesSettle
	}
	if cfg.BookmarkFrom <= 0 {
		cfg.BookmarkFrom = defaultBookmarkFrom
	}
	s := &Store{core: &core{timeout: cfg.QueryTimeout, now: cfg.Now, breaker: newBreaker(cfg), settle: cfg.ChangesSettle,
		counts: newCountCache(cfg.TotalMaxAge, cfg.ExactTotalBelow, cfg.Now), searchExact: cfg.SearchExactBelow}}
	s.changes = &Changes{core: s.core}
	if cfg.TotalMaxAge > 0 {
		s.marks = newBookmarks(cfg.TotalMaxAge, cfg.BookmarkFrom, cfg.Now)
	}
	var primary dbConn
	var err error
	switch {
	case isPostgresURL(cfg.URL):
		primary, err = openPostgres(ctx, cfg)
		s.d = postgresDialect
	case strings.HasPrefix(cfg.URL, "sqlite:"):
		primary, err = openSQLite(ctx, cfg)
		s.d = sqliteDialect
	default:
		return nil, errors.New("backend: database URL must be a postgres:// or sqlite: URL")
	}
	if err != nil {
		return nil, err
	}
	s.db.primary = traceDB(s.core, primary, cfg.TracerProvider)
	if cfg.ReplicaURL != "" {
		replica, err := openReplica(ctx, s.d, cfg)
		if err != nil {
			primary.close()
			return nil, err
		}
		s.db.replica = traceDB(s.core, replica, cfg.TracerProvider)
		s.db.recent = newRecentWrites(cfg)
	}
	s.q = buildQueries(s.d)
	if cfg.Lazy {
		return s, nil
	}
	if err := s.Ping(ctx); err != nil {
		s.db.close()
		return nil, err
	}
	return s, nil
}

// The Store's operations. A call goes through these layers, each once and
// in this order:
//
//  1. the method below reads its ids: a malformed one is "not found" (or an
//     empty list) without a query and without the breaker, which must only
//     hear of calls that reached the database;
//  2. run (breaker.go) lets the call through the circuit breaker or refuses
//     it at once. It counts calls, not statements: a call that reads twice
//     (a count and its page, a get asked again of the primary) fails or
//     succeeds once;
//  3. the call's query code (clients.go, invoices.go, with counts.go and
//     bookmarks.go for lists) bounds the whole call by QueryTimeout, states
//     once what its reads must see, and builds its statements and maps
//     their rows;
//  4. conns (replica.go) picks the connection: writes to the primary,
//     reads to the primary or the replica by that freshness, the one place
//     that decides it;
//  5. tracedDB (observe.go) makes a span of each statement, on the
//     connection that runs it;
//  6. the driver (postgres.go, sqlite.go) runs it.

// Company returns a platform company by id; ErrNotFound for an unknown or
// malformed id.
func (s *Store) Company(ctx context.Context, id string) (invoicing.Company, error) {
	id, ok := invoicing.CanonicalUUID(id)
	if !ok {
		return invoicing.Company{}, ErrNotFound
	}
	return run(ctx, s.breaker, func() (invoicing.Company, error) { return s.queryCompany(ctx, id) })
}

// GetClient returns a live customer of the company; ErrNotFound for an
// unknown, deleted, malformed or another company's id.
func (s *Store) GetClient(ctx context.Context, companyID, id string) (invoicing.Client, error) {
	companyID, ok1 := invoicing.CanonicalUUID(companyID)
	id, ok2 := invoicing.CanonicalUUID(id)
	if !ok1 || !ok2 {
		return invoicing.Client{}, ErrNotFound
	}
	return run(ctx, s.breaker, func() (invoicing.Client, error) { return s.queryClient(ctx, companyID, id) })
}

// ListClients returns one page of the company's live customers, newest first
// (ties by id), optionally matching Search against the name (case-insensitive
// substring) or the NIF (spaces and case ignored).
func (s *Store) ListClients(ctx context.Context, companyID string, f invoicing.ClientFilter) (invoicing.Page[invoicing.Client], error) {
	if err := checkPage(f.Page, f.PageSize); err != nil {
		return invoicing.Page[invoicing.Client]{}, err
	}
	companyID, ok := invoicing.CanonicalUUID(companyID)
	if !ok {
		return emptyPage[invoicing.Client](f.Page, f.PageSize), nil // no company, no clients
	}
	return run(ctx, s.breaker, func() (invoicing.Page[invoicing.Client], error) { return s.queryClients(ctx, companyID, f) })
}

// CreateClient inserts a customer into the company and returns it as
// GetClient would. The NIF is stored normalized (an empty one as NULL) and an
// Angolan phone as +244XXXXXXXXX. ErrNIFConflict when the company has a live
// customer with the same NIF, decided by the database, also under races.
// With c.ID set, the customer gets that id, and a company's customer that has
// it already (an earlier attempt of the same create) is a *ClientExistsError:
// the database refuses the second row, whoever asks.
func (s *Store) CreateClient(ctx context.Context, companyID string, c invoicing.NewClient) (invoicing.Client, error) {
	companyID, ok := invoicing.CanonicalUUID(companyID)
	if !ok {
		return invoicing.Client{}, ErrNotFound
	}
	return run(ctx, s.breaker, func() (invoicing.Client, error) { return s.insertClient(ctx, companyID, c) })
}

// ListInvoices returns one page of the company's documents: drafts first, then
// newest issuedAt first, ties by id (descending), a total order so that
// walking the pages never repeats or skips one.
func (s *Store) ListInvoices(ctx context.Context, companyID string, f invoicing.InvoiceFilter) (invoicing.Page[invoicing.Invoice], error) {
	if err := checkPage(f.Page, f.PageSize); err != nil {
		return invoicing.Page[invoicing.Invoice]{}, err
	}
	companyID, ok := invoicing.CanonicalUUID(companyID)
	if !ok {
		return emptyPage[invoicing.Invoice](f.Page, f.PageSize), nil
	}
	return run(ctx, s.breaker, func() (invoicing.Page[invoicing.Invoice], error) { return s.queryInvoices(ctx, companyID, f) })
}

// GetInvoice returns one document of the company with its items and the
// state of its newest AGT submission.
func (s *Store) GetInvoice(ctx context.Context, companyID, id string) (invoicing.Invoice, error) {
	companyID, ok1 := invoicing.CanonicalUUID(companyID)
	id, ok2 := invoicing.CanonicalUUID(id)
	if !ok1 || !ok2 {
		return invoicing.Invoice{}, ErrNotFound
	}
	return run(ctx, s.breaker, func() (invoicing.Invoice, error) { return s.queryInvoice(ctx, companyID, id) })
}

func isPostgresURL(u string) bool {
	return strings.HasPrefix(u, "postgres://") || strings.HasPrefix(u, "postgresql://")
}

// Close releases the pool. Calls after Close fail with ErrUnavailable.
func (s *Store) Close() { s.db.close() }

// Engine is "postgres" or "sqlite".
func (s *Store) Engine() string { return s.d.engine }

// Ping checks that the database answers within the query timeout. It
// bypasses the circuit breaker (see breaker), so readiness sees the truth.
func (s *Store) Ping(ctx context.Context) error {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	if err := s.db.ping(ctx); err != nil {
		return s.fail(ctx, "ping", err)
	}
	return nil
}

func (s *core) deadline(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.timeout)
}

// fail turns a driver error into the Store's error contract. ctx is the
// call's (deadline) context: a call cut short by it is "unavailable" whatever
// shape the driver's error takes.
func (s *core) fail(ctx context.Context, op string, err error) error {
	if errors.Is(err, ErrNotFound) || errors.Is(err, ErrInvalid) || errors.Is(err, ErrNIFConflict) ||
		errors.Is(err, ErrUnavailable) || errors.Is(err, errIDTaken) {
		return err
	}
	if sentinel := s.db.classify(err); sentinel != nil {
		if sentinel == ErrUnavailable {
			return fmt.Errorf("%w: %s: %w", ErrUnavailable, op, err)
		}
		return sentinel
	}
	if ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return fmt.Errorf("%w: %s: %w", ErrUnavailable, op, err)
	}
	return fmt.Errorf("backend: %s: %w", op, err)
}

// queryCompany is Company for a canonical id.
func (s *Store) queryCompany(ctx context.Context, id string) (invoicing.Company, error) {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	var c invoicing.Company
	err := s.db.reader(settled, id).one(ctx, s.q.company, []any{id}, &c.ID, &c.Name, &c.NIF, &c.Status)
	if errors.Is(err, errNoRows) {
		return invoicing.Company{}, ErrNotFound
	}
	if err != nil {
		return invoicing.Company{}, s.fail(ctx, "company", err)
	}
	return c, nil
}

// emptyPage is the answer of a list with no rows.
func emptyPage[T any](page, size int) invoicing.Page[T] {
	return invoicing.Page[T]{Data: []T{}, Page: page, PageSize: size}
}

// checkPage validates page and pageSize.
func checkPage(page, pageSize int) error {
	if page < 1 || pageSize < 1 || pageSize > 100 {
		return fmt.Errorf("%w: page must be >= 1 and pageSize 1..100", ErrInvalid)
	}
	return nil
}

// pastEnd reports whether page starts after the last of total rows, without
// multiplying (page may be huge).
func pastEnd(page, pageSize int, total int64) bool {
	if total == 0 {
		return true
	}
	return int64(page-1) > (total-1)/int64(pageSize)
}
