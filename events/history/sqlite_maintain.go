package history

import (
	"context"

	"github.com/invoicing-ao/gateway/invoicing"
)

// Maintain deletes what is past its window, in bounded batches (Store).
// The feed's events are counted as they go (each feed's last seq deleted,
// its cut, and how many), in the transaction that deletes them.
func (s *liteStore) Maintain(ctx context.Context) (Maintenance, error) {
	if !s.maintaining.TryLock() {
		return Maintenance{Busy: true}, nil
	}
	defer s.maintaining.Unlock()
	now := s.nowMs()
	var m Maintenance
	n, err := s.deleteEvents(ctx, msSeq(now-s.cfg.FeedWindow.Milliseconds()))
	m.Deleted += n
	if err != nil {
		return m, fail(err)
	}
	for _, t := range []struct {
		table, column string
		before        int64
	}{
		{"event_marks", "marked_ms", now - s.cfg.Remember.Milliseconds()},
		{"deliveries", "queued_ms", s.kept(now)},
		{"delivery_attempts", "queued_ms", s.kept(now)},
	} {
		n, err := s.db.DeleteBefore(ctx, t.table, t.column, t.before, s.cfg.Deletes)
		m.Deleted += n
		if err != nil {
			return m, fail(err)
		}
	}
	return m, nil
}

// deleteEvents deletes the events before seq before, in batches.
func (s *liteStore) deleteEvents(ctx context.Context, before int64) (int64, error) {
	size, most := s.cfg.Deletes.Size, s.cfg.Deletes.Max
	if size <= 0 {
		size = 1000
	}
	if most <= 0 {
		most = 100
	}
	var total int64
	for range most {
		n, err := s.deleteEventsBatch(ctx, before, size)
		total += n
		if err != nil || n < int64(size) {
			return total, err
		}
	}
	return total, nil
}

func (s *liteStore) deleteEventsBatch(ctx context.Context, before int64, size int) (int64, error) {
	tx, err := s.db.Writer().BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer func() { _ = tx.Rollback() }()
	rows, err := tx.QueryContext(ctx, "DELETE FROM events WHERE rowid IN (SELECT rowid FROM events WHERE seq < $1 LIMIT $2) RETURNING company_id, mode, seq", before, size)
	if err != nil {
		return 0, err
	}
	type cut struct{ last, n int64 }
	cuts := map[feedKey]cut{}
	var n int64
	for rows.Next() {
		var f feedKey
		var mode string
		var seq int64
		if err := rows.Scan(&f.company, &mode, &seq); err != nil {
			rows.Close()
			return 0, err
		}
		f.mode = invoicing.Mode(mode)
		c := cuts[f]
		cuts[f] = cut{max(c.last, seq), c.n + 1}
		n++
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, err
	}
	for f, c := range cuts {
		if _, err := tx.ExecContext(ctx, `INSERT INTO feed_cuts (company_id, mode, cut_seq, dropped) VALUES ($1, $2, $3, $4)
ON CONFLICT (company_id, mode) DO UPDATE SET cut_seq = max(cut_seq, excluded.cut_seq), dropped = dropped + excluded.dropped`,
			f.company, string(f.mode), c.last, c.n); err != nil {
			return 0, err
		}
	}
	return n, tx.Commit()
}
