package backend

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Where statements go. A Store has a primary and, with Config.ReplicaURL, a
// read replica of the same engine. Writes go to the primary. Each call
// states once what its reads need to see (its freshness), and conns.reader,
// the one place that chooses, answers with the connection its reads go to:
//
//   - settled: the replica. Invoices and companies, which the gateway never
//     writes;
//   - ownWrites: the primary while the company created a client through
//     this Store within ReadYourWritesWindow, so a list right after a create
//     includes it; the replica otherwise;
//   - newRow: as ownWrites, and a row by id that the replica does not have
//     is looked up again on the primary: a client created a moment ago,
//     through this instance or any other, is found at once (the price: a 404
//     costs one query on each database);
//   - written: the primary. A read within a write, of what the primary has
//     just answered: a create's own earlier attempt (same id), which the
//     primary refused as a duplicate and the replica may not have yet;
//   - current: the primary. The events' detector (changes.go), which
//     follows changes by their time: a replica behind would let it pass a
//     change it has not received yet.
//
// Without a replica every read goes to the primary. What remains: a list
// served by another gateway instance than the one that took the create lags
// by the replication delay, at most.
//
// The replica is a dependency like the primary: Ping checks both, so an
// instance whose replica is down reports not ready rather than failing reads.

// DefaultReadYourWritesWindow is Config.ReadYourWritesWindow's default.
const DefaultReadYourWritesWindow = 5 * time.Second

// freshness is what a call's reads must see of the writes made through the
// primary; see above.
type freshness uint8

const (
	settled freshness = iota
	ownWrites
	newRow
	written
	current
)

// conns are a Store's connections: each is traced (observe.go) over its
// driver.
type conns struct {
	primary dbConn
	replica dbConn        // nil: none
	recent  *recentWrites // set with a replica: who wrote lately
}

// reader is where one call's reads go, as conns.reader chose.
type reader struct {
	db dbConn
	// then, when set, is asked for a row that db did not have (newRow).
	then dbConn
}

// reader chooses where the reads of a call about company go, by the
// freshness they need. It is the only place that chooses between the
// primary and the replica; a call asks it once, so a list's count and its
// page read the same copy.
func (c *conns) reader(need freshness, company string) reader {
	switch {
	case c.replica == nil, need == written, need == current:
		return reader{db: c.primary}
	case need != settled && c.recent.recent(company):
		return reader{db: c.primary} // the company's own write may not have replicated yet
	case need == newRow:
		return reader{db: c.replica, then: c.primary}
	}
	return reader{db: c.replica}
}

func (r reader) query(ctx context.Context, sql string, args ...any) (rowIter, error) {
	return r.db.query(ctx, sql, args...)
}

// errNoRows is reader.one's "nothing matched".
var errNoRows = errors.New("backend: no rows")

// one scans the first row of q into dest, or returns errNoRows.
func (r reader) one(ctx context.Context, q string, args []any, dest ...any) error {
	err := firstRow(ctx, r.db, q, args, dest)
	if r.then != nil && errors.Is(err, errNoRows) {
		err = firstRow(ctx, r.then, q, args, dest)
	}
	return err
}

func firstRow(ctx context.Context, db dbConn, q string, args, dest []any) error {
	rows, err := db.query(ctx, q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return err
		}
		return errNoRows
	}
	if err := rows.Scan(dest...); err != nil {
		return err
	}
	rows.Close()
	return rows.Err()
}

// wrote records that company wrote through this Store (to the primary).
func (c *conns) wrote(company string) {
	if c.recent != nil {
		c.recent.wrote(company)
	}
}

func (c *conns) ping(ctx context.Context) error {
	if err := c.primary.ping(ctx); err != nil {
		return err
	}
	if c.replica == nil {
		return nil
	}
	if err := c.replica.ping(ctx); err != nil {
		return fmt.Errorf("replica: %w", err)
	}
	return nil
}

func (c *conns) close() {
	c.primary.close()
	if c.replica != nil {
		c.replica.close()
	}
}

// classify is the engine's, the same for both connections.
func (c *conns) classify(err error) error { return c.primary.classify(err) }

// openReplica opens cfg.ReplicaURL, of the engine d of cfg.URL.
func openReplica(ctx context.Context, d *dialect, cfg Config) (dbConn, error) {
	rc := cfg
	rc.URL = cfg.ReplicaURL
	var replica dbConn
	var err error
	switch {
	case d == postgresDialect && isPostgresURL(cfg.ReplicaURL):
		replica, err = openPostgres(ctx, rc)
	case d == sqliteDialect && !isPostgresURL(cfg.ReplicaURL):
		replica, err = openSQLite(ctx, rc)
	default:
		err = errors.New("backend: the replica URL must use the primary's engine")
	}
	if err != nil {
		return nil, fmt.Errorf("replica: %w", err)
	}
	return replica, nil
}

func newRecentWrites(cfg Config) *recentWrites {
	window := cfg.ReadYourWritesWindow
	if window <= 0 {
		window = DefaultReadYourWritesWindow
	}
	return &recentWrites{window: window, now: cfg.Now, last: map[string]time.Time{}}
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
