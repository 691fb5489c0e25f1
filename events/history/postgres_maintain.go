package history

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/invoicing-ao/gateway/internal/sqldb"
)

// maintainLock is the advisory lock one maintaining instance holds.
const maintainLock = 0x67775f686973 // "gw_his"

// pgTable is a partitioned table and how long it keeps its rows.
type pgTable struct {
	r    sqldb.Ranges
	keep time.Duration
}

func (s *pgStore) tables() []pgTable {
	return []pgTable{
		{eventsRanges, s.cfg.FeedWindow},
		{marksRanges, s.cfg.Remember},
		{deliveriesRanges, s.cfg.Retention},
		{attemptsRanges, s.cfg.Retention},
	}
}

// ensure makes the partitions each table needs from its window's start to
// Ahead from now (those behind take the rows an upgrade brings, recorded
// before this database existed).
func (s *pgStore) ensure(ctx context.Context) ([]string, error) {
	now := s.cfg.Now()
	var made []string
	for _, t := range s.tables() {
		m, err := s.db.EnsurePartitions(ctx, t.r, now.Add(-t.keep), now.Add(s.cfg.Ahead))
		made = append(made, m...)
		if err != nil {
			return made, err
		}
	}
	return made, nil
}

// Maintain makes partitions ahead and drops those past their window
// (Store). The feed's partitions are counted before they go: each feed's
// last seq dropped (its cut, before which a cursor is expired) and how
// many of its events went (its size, for Stats).
func (s *pgStore) Maintain(ctx context.Context) (Maintenance, error) {
	conn, err := s.db.Pool().Acquire(ctx)
	if err != nil {
		return Maintenance{}, fail(err)
	}
	defer conn.Release()
	var mine bool
	if err := conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", int64(maintainLock)).Scan(&mine); err != nil {
		return Maintenance{}, fail(err)
	}
	if !mine {
		return Maintenance{Busy: true}, nil
	}
	defer func() {
		_, _ = conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", int64(maintainLock))
	}()
	var m Maintenance
	if m.Made, err = s.ensure(ctx); err != nil {
		return m, fail(err)
	}
	now := s.cfg.Now()
	for _, t := range s.tables() {
		old, err := s.db.ExpiredPartitions(ctx, t.r, now.Add(-t.keep))
		if err != nil {
			return m, fail(err)
		}
		for _, p := range old {
			if t.r.Table == eventsRanges.Table && p.Attached {
				if err := s.cut(ctx, p); err != nil {
					return m, fail(err)
				}
			}
			if err := s.db.DropPartition(ctx, t.r, p); err != nil {
				return m, fail(err)
			}
			m.Dropped = append(m.Dropped, p.Name)
		}
	}
	return m, nil
}

// cut records, for each feed with events in partition p, its last seq
// there and how many there were. Once only: a feed whose cut is at or past
// p's start has counted p already (partitions go oldest first), so a drop
// cut off after this and tried again counts nothing twice.
func (s *pgStore) cut(ctx context.Context, p sqldb.Partition) error {
	tx, err := s.db.Pool().Begin(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	// A day's events of every company: longer than a request's statement.
	if _, err := tx.Exec(ctx, "SET LOCAL statement_timeout = '15min'"); err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `INSERT INTO feed_cuts AS c (company_id, mode, cut_seq, dropped)
SELECT company_id, mode, max(seq), count(*) FROM ONLY `+pgx.Identifier{p.Name}.Sanitize()+` GROUP BY company_id, mode ORDER BY company_id, mode
ON CONFLICT (company_id, mode) DO UPDATE SET cut_seq = excluded.cut_seq, dropped = c.dropped + excluded.dropped
WHERE c.cut_seq < $1`, p.From)
	if err != nil {
		return err
	}
	return tx.Commit(ctx)
}
