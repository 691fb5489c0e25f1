package backend

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Read replicas (Config.ReplicaURL). With a replica, statements that write
// go to the primary and statements that read go to the replica, except where
// a caller could notice the replica's lag on their own writes:
//
//   - a client fetched by id that the replica does not have is looked up
//     again on the primary: a client created a moment ago, through this
//     instance or any other, is found at once (the price: a 404 costs one
//     query on each database);
//   - a company that created a client through this Store within
//     ReadYourWritesWindow has its client lists read from the primary, so a
//     list right after a create includes it.
//
// What remains: a list served by another gateway instance than the one that
// took the create lags by the replication delay, at most. Invoices are never
// written by the gateway, so their reads always go to the replica.
//
// The replica is a dependency like the primary: Ping checks both, so an
// instance whose replica is down reports not ready rather than failing reads.

const defaultReadYourWritesWindow = 5 * time.Second

// replicated is a dbConn over a primary and a replica of the same engine.
type replicated struct {
	primary, replica dbConn
}

// primaryKey marks a context whose reads must see the primary.
type primaryKey struct{}

func onPrimary(ctx context.Context) context.Context {
	return context.WithValue(ctx, primaryKey{}, true)
}

func wantsPrimary(ctx context.Context) bool {
	v, _ := ctx.Value(primaryKey{}).(bool)
	return v
}

func (r *replicated) query(ctx context.Context, sql string, args ...any) (rowIter, error) {
	if wantsPrimary(ctx) {
		return r.primary.query(ctx, sql, args...)
	}
	return r.replica.query(ctx, sql, args...)
}

func (r *replicated) exec(ctx context.Context, sql string, args ...any) (int64, error) {
	return r.primary.exec(ctx, sql, args...)
}

func (r *replicated) ping(ctx context.Context) error {
	if err := r.primary.ping(ctx); err != nil {
		return err
	}
	if err := r.replica.ping(ctx); err != nil {
		return fmt.Errorf("replica: %w", err)
	}
	return nil
}

func (r *replicated) close() {
	r.primary.close()
	r.replica.close()
}

func (r *replicated) classify(err error) error { return r.primary.classify(err) }

// withReplica opens cfg.ReplicaURL, when set, and returns a dbConn that
// routes between it and primary; without a replica it returns primary as
// is. On error primary is closed.
func withReplica(ctx context.Context, s *Store, primary dbConn, cfg Config) (dbConn, error) {
	if cfg.ReplicaURL == "" {
		return primary, nil
	}
	rc := cfg
	rc.URL = cfg.ReplicaURL
	var replica dbConn
	var err error
	switch {
	case isPostgresURL(cfg.URL) && isPostgresURL(cfg.ReplicaURL):
		replica, err = openPostgres(ctx, rc)
	case s.d == sqliteDialect && !isPostgresURL(cfg.ReplicaURL):
		replica, err = openSQLite(ctx, rc)
	default:
		err = errors.New("backend: the replica URL must use the primary's engine")
	}
	if err != nil {
		primary.close()
		return nil, fmt.Errorf("replica: %w", err)
	}
	window := cfg.ReadYourWritesWindow
	if window <= 0 {
		window = defaultReadYourWritesWindow
	}
	s.recent = &recentWrites{window: window, now: cfg.Now, last: map[string]time.Time{}}
	return &replicated{primary: primary, replica: replica}, nil
}

// recentWrites remembers which companies wrote through this Store lately.
type recentWrites struct {
	window time.Duration
	now    func() time.Time
	mu     sync.Mutex
	last   map[string]time.Time // company id → time of its latest write
}

// sweepAbove bounds the map: past this size, a write first forgets the
// companies whose window has closed.
const sweepAbove = 4096

func (w *recentWrites) wrote(company string) {
	now := w.now()
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.last) >= sweepAbove {
		for c, t := range w.last {
			if now.Sub(t) >= w.window {
				delete(w.last, c)
			}
		}
	}
	w.last[company] = now
}

func (w *recentWrites) recent(company string) bool {
	w.mu.Lock()
	t, ok := w.last[company]
	w.mu.Unlock()
	return ok && w.now().Sub(t) < w.window
}

// readFor routes the reads of a call about company: to the primary while
// the company's own write through this Store may not have replicated yet.
func (s *Store) readFor(ctx context.Context, company string) context.Context {
	if s.recent != nil && s.recent.recent(company) {
		return onPrimary(ctx)
	}
	return ctx
}

// noteWrite records that company wrote through this Store.
func (s *Store) noteWrite(company string) {
	if s.recent != nil {
		s.recent.wrote(company)
	}
}

// queryOneFresh is queryOne for a row a caller may have just created: read
// where readFor says, and when the replica has no such row, ask the primary.
func (s *Store) queryOneFresh(ctx context.Context, company, q string, args []any, dest ...any) error {
	ctx = s.readFor(ctx, company)
	err := s.queryOne(ctx, q, args, dest...)
	if errors.Is(err, errNoRows) && s.recent != nil && !wantsPrimary(ctx) {
		err = s.queryOne(onPrimary(ctx), q, args, dest...)
	}
	return err
}
