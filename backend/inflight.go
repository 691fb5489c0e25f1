package backend

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/invoicing-ao/gateway/invoicing"
)

// inFlightSQL reads, in one statement, the database's clock and the
// transactions open in this database but the reader's own. The clock is
// statement_timestamp(): the statement's arrival, so it is read before the
// activity (PostgreSQL takes its copy of pg_stat_activity when the
// statement first reads it). A transaction that had started a little
// before that time, and is not listed, had ended before the reading: its
// rows are visible to the reads that follow.
//
// Every role sees every session's pid, database and transaction id
// (backend_xid, set at its first write); its start (xact_start) and kind
// (backend_type) only for its own role's sessions, unless it has the
// privileges of pg_read_all_stats (part of pg_monitor). Only client
// sessions are kept: the others (autovacuum, WAL senders) write no change
// times; a NULL kind is a session the role may not see into.
const inFlightSQL = `SELECT c.now, c.all_stats, a.pid, a.xact_start, a.backend_xid::text
FROM (SELECT statement_timestamp() AS now, pg_has_role(current_user, 'pg_read_all_stats', 'USAGE') AS all_stats) c
LEFT JOIN pg_stat_activity a ON a.datname = current_database() AND a.pid <> pg_backend_pid()
  AND (a.backend_type = 'client backend' OR a.backend_type IS NULL)
  AND (a.xact_start IS NOT NULL OR a.backend_xid IS NOT NULL)`

// InFlight is the database's clock and its open transactions, for the
// events' detector (events.Source), read on the primary with SELECT
// privileges only: PostgreSQL shows every open transaction's start to a
// role with pg_monitor's pg_read_all_stats (invoicing.SightAll), else only
// which transactions have written (invoicing.SightWriters). SQLite, whose
// one writer commits right after its changes' times, shows its clock
// (invoicing.SightClock).
//
// The Store's own changes being written are listed too, at the time they
// record (this process's clock, taken before the statement): a create that
// waits for a connection, or runs slowly, is read at its commit all the
// same.
func (s *Changes) InFlight(ctx context.Context) (invoicing.Horizon, error) {
	if s.d.engine != "postgres" {
		h := invoicing.Horizon{Now: s.now().UTC(), Sight: invoicing.SightClock}
		h.Open = s.writing.open(h.Open)
		return h, nil
	}
	h, err := s.inFlight(ctx)
	// Listed after the database's reading: a change not listed had ended
	// before it, and its commit is visible to the reads that follow.
	h.Open = s.writing.open(h.Open)
	return h, err
}

func (s *Changes) inFlight(ctx context.Context) (invoicing.Horizon, error) {
	return run(ctx, s.breaker, func() (invoicing.Horizon, error) {
		ctx, cancel := s.deadline(ctx)
		defer cancel()
		rows, err := s.db.reader(current, "").query(ctx, inFlightSQL)
		if err != nil {
			return invoicing.Horizon{}, s.fail(ctx, "transactions in flight", err)
		}
		defer rows.Close()
		var h invoicing.Horizon
		for rows.Next() {
			var all bool
			var pid *int64
			var start *time.Time
			var xid *string
			if err := rows.Scan(&h.Now, &all, &pid, &start, &xid); err != nil {
				return invoicing.Horizon{}, s.fail(ctx, "transactions in flight", err)
			}
			if h.Sight = invoicing.SightWriters; all {
				h.Sight = invoicing.SightAll
			}
			if tx, ok := openTransaction(pid, start, xid); ok {
				h.Open = append(h.Open, tx)
			}
		}
		if err := rows.Err(); err != nil {
			return invoicing.Horizon{}, s.fail(ctx, "transactions in flight", err)
		}
		h.Now = h.Now.UTC()
		return h, nil
	})
}

// openTransaction names a row of pg_stat_activity: by its session and
// start when the start is shown (a session's next transaction has another
// start), else by its transaction id, which PostgreSQL does not reuse
// while it is open.
func openTransaction(pid *int64, start *time.Time, xid *string) (invoicing.OpenTransaction, bool) {
	switch {
	case pid == nil:
		return invoicing.OpenTransaction{}, false // no session listed: the LEFT JOIN's row
	case start != nil:
		at := start.UTC()
		return invoicing.OpenTransaction{ID: strconv.FormatInt(*pid, 10) + "@" + strconv.FormatInt(at.UnixMicro(), 10), Start: at}, true
	case xid != nil:
		return invoicing.OpenTransaction{ID: "xid " + *xid}, true
	}
	return invoicing.OpenTransaction{}, false
}

// pendingWrites are a Store's changes being written, each at the time it
// records. The zero value is ready.
type pendingWrites struct {
	mu   sync.Mutex
	next uint64
	at   map[uint64]time.Time
}

// begin notes a change recorded at at, until the returned end is called.
func (w *pendingWrites) begin(at time.Time) (end func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.at == nil {
		w.at = map[uint64]time.Time{}
	}
	w.next++
	n := w.next
	w.at[n] = at.UTC()
	return func() {
		w.mu.Lock()
		delete(w.at, n)
		w.mu.Unlock()
	}
}

// open appends the changes being written to txs.
func (w *pendingWrites) open(txs []invoicing.OpenTransaction) []invoicing.OpenTransaction {
	w.mu.Lock()
	defer w.mu.Unlock()
	for n, at := range w.at {
		txs = append(txs, invoicing.OpenTransaction{ID: "own " + strconv.FormatUint(n, 10), Start: at})
	}
	return txs
}
