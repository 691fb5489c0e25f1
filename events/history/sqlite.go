package history

import (
	"context"
	"database/sql"
	"errors"
	"sync"

	"github.com/invoicing-ao/gateway/invoicing"
)

// liteStore is the history on SQLite (the demo). Its writes run on the
// one writer connection, each transaction holding the write lock from its
// start, so a feed's writers take turns there; statements are prepared
// once a transaction and run row by row, which in-process costs little.
// The demo is one process: one Maintain at a time is kept by a mutex.
type liteStore struct {
	*core
	maintaining sync.Mutex
}

// Record records a detection step (Store).
func (s *liteStore) Record(ctx context.Context, b Batch) (Recorded, error) {
	if err := checkBatch(b); err != nil {
		return Recorded{}, err
	}
	rec, err := s.record(ctx, b)
	return rec, fail(err)
}

func (s *liteStore) record(ctx context.Context, b Batch) (Recorded, error) {
	now := s.nowMs()
	tx, err := s.db.Writer().BeginTx(ctx, nil)
	if err != nil {
		return Recorded{}, err
	}
	defer func() { _ = tx.Rollback() }()
	if m := b.Move; m.Stream != "" {
		res, err := tx.ExecContext(ctx, "UPDATE watermarks SET mark = $4 WHERE mode = $1 AND stream = $2 AND mark = $3", string(m.Mode), m.Stream, m.Old, m.Next)
		if err != nil {
			return Recorded{}, err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			if m.Old != "" {
				return Recorded{Moved: true}, nil
			}
			res, err = tx.ExecContext(ctx, "INSERT INTO watermarks (mode, stream, mark) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING", string(m.Mode), m.Stream, m.Next)
			if err != nil {
				return Recorded{}, err
			}
			if n, _ := res.RowsAffected(); n == 0 {
				return Recorded{Moved: true}, nil
			}
		}
	}
	heads := map[feedKey]int64{}
	for _, f := range feedsOf(b) {
		var last int64
		err := tx.QueryRowContext(ctx, "SELECT last_seq FROM feed_heads WHERE company_id = $1 AND mode = $2", f.company, string(f.mode)).Scan(&last)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return Recorded{}, err
		}
		heads[f] = last
	}
	marks, err := s.readMarks(ctx, tx, b, now)
	if err != nil {
		return Recorded{}, err
	}
	existing := map[delKey]bool{}
	for _, k := range s.refoundKeys(b, marks, now) {
		var n int64
		err := tx.QueryRowContext(ctx, "SELECT count(*) FROM deliveries WHERE company_id = $1 AND endpoint_id = $2 AND event_id = $3 AND queued_ms >= $4",
			k.company, k.endpoint, k.id, s.kept(now)).Scan(&n)
		if err != nil {
			return Recorded{}, err
		}
		existing[k] = n > 0
	}
	p := s.plan(b, heads, marks, existing, now)
	if err := liteWrite(ctx, tx, p); err != nil {
		return Recorded{}, err
	}
	if err := tx.Commit(); err != nil {
		return Recorded{}, err
	}
	return p.recorded(), nil
}

func (s *liteStore) readMarks(ctx context.Context, tx *sql.Tx, b Batch, now int64) (map[markKey]mark, error) {
	stmt, err := tx.PrepareContext(ctx, "SELECT min(marked_ms), seq FROM event_marks WHERE company_id = $1 AND mode = $2 AND event_id = $3 AND marked_ms >= $4")
	if err != nil {
		return nil, err
	}
	defer stmt.Close()
	marks := map[markKey]mark{}
	for _, k := range markKeys(b) {
		var ms, seq sql.NullInt64
		if err := stmt.QueryRowContext(ctx, k.company, string(k.mode), k.id, now-s.cfg.Remember.Milliseconds()).Scan(&ms, &seq); err != nil {
			return nil, err
		}
		if ms.Valid {
			marks[k] = mark{ms: ms.Int64, seq: seq.Int64}
		}
	}
	return marks, nil
}

// liteWrite writes a plan's rows.
func liteWrite(ctx context.Context, tx *sql.Tx, p plan) error {
	run := func(q string, rows int, args func(i int) []any) error {
		if rows == 0 {
			return nil
		}
		stmt, err := tx.PrepareContext(ctx, q)
		if err != nil {
			return err
		}
		defer stmt.Close()
		for i := range rows {
			if _, err := stmt.ExecContext(ctx, args(i)...); err != nil {
				return err
			}
		}
		return nil
	}
	err := run("INSERT INTO events (company_id, mode, seq, event_id, type, resource_id, body) VALUES ($1, $2, $3, $4, $5, $6, $7)", len(p.events), func(i int) []any {
		e := p.events[i]
		return []any{e.company, string(e.mode), e.seq, e.id, e.typ, e.resource, e.body}
	})
	if err == nil {
		err = run("INSERT INTO event_marks (company_id, mode, event_id, marked_ms, seq) VALUES ($1, $2, $3, $4, $5)", len(p.marks), func(i int) []any {
			k := p.marks[i]
			return []any{k.company, string(k.mode), k.id, k.ms, k.seq}
		})
	}
	if err == nil {
		err = run(`INSERT INTO deliveries (company_id, endpoint_id, queued_ms, event_id, mode, type, resource_id, seq, state, next_ms, cause, body)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'pending', $3, $9, $10)`, len(p.deliveries), func(i int) []any {
			d := p.deliveries[i]
			body := d.body
			if body == nil {
				body = []byte{}
			}
			return []any{d.company, d.endpoint, d.queued, d.id, string(d.mode), d.typ, d.resource, d.seq, d.cause, body}
		})
	}
	if err != nil {
		return err
	}
	for k, h := range p.heads {
		if h.added == 0 {
			continue
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO feed_heads (company_id, mode, last_seq, recorded) VALUES ($1, $2, $3, $4)
ON CONFLICT (company_id, mode) DO UPDATE SET last_seq = excluded.last_seq, recorded = recorded + excluded.recorded`, k.company, string(k.mode), h.last, h.added); err != nil {
			return err
		}
	}
	return nil
}

// Fetch reads deliveries to make, with their bodies (Store), one by one.
func (s *liteStore) Fetch(ctx context.Context, keys []DeliveryKey) ([]Fetched, error) {
	out := make([]Fetched, len(keys))
	kept := s.kept(s.nowMs())
	for i, k := range keys {
		if err := checkKey(k); err != nil {
			return nil, err
		}
		f := Fetched{DeliveryKey: k}
		var mode string
		var attempts int64
		err := s.db.Reader().QueryRowContext(ctx, `SELECT d.mode, d.type, d.resource_id, d.state, d.attempts, d.queued_ms, d.cause,
  CASE WHEN length(d.body) > 0 THEN d.body ELSE COALESCE(ev.body, x'') END
FROM deliveries d LEFT JOIN events ev ON d.seq > 0 AND ev.company_id = d.company_id AND ev.mode = d.mode AND ev.seq = d.seq
WHERE d.company_id = $1 AND d.endpoint_id = $2 AND d.event_id = $3 AND d.queued_ms >= $4 ORDER BY d.queued_ms DESC LIMIT 1`,
			k.CompanyID, k.EndpointID, k.EventID, kept).Scan(&mode, &f.Type, &f.ResourceID, &f.State, &attempts, &f.QueuedMs, &f.Cause, &f.Body)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return nil, fail(err)
		}
		f.Mode, f.Attempts, f.Found = invoicing.Mode(mode), int(attempts), err == nil && len(f.Body) > 0
		out[i] = f
	}
	return out, nil
}

// Complete records outcomes (Store), in one transaction.
func (s *liteStore) Complete(ctx context.Context, outs []Outcome) error {
	for _, o := range outs {
		if err := checkOutcome(o); err != nil {
			return err
		}
	}
	now := s.nowMs()
	tx, err := s.db.Writer().BeginTx(ctx, nil)
	if err != nil {
		return fail(err)
	}
	defer func() { _ = tx.Rollback() }()
	for _, o := range outs {
		u := updateOf(o, now)
		var queued, logged int64
		err := tx.QueryRowContext(ctx, `UPDATE deliveries SET state = CASE WHEN $5 = '' THEN state ELSE $5 END, attempts = attempts + $6,
  next_ms = CASE WHEN $5 = '' THEN next_ms ELSE $7 END, done_ms = CASE WHEN $5 = '' THEN done_ms ELSE $8 END, logged = logged + $9
WHERE company_id = $1 AND endpoint_id = $2 AND event_id = $3 AND queued_ms >= $4 RETURNING queued_ms, logged`,
			o.CompanyID, o.EndpointID, o.EventID, s.kept(now), u.state, u.inc, u.next, u.done, u.logged).Scan(&queued, &logged)
		if errors.Is(err, sql.ErrNoRows) || o.Attempt == nil {
			continue // past the retention: left alone
		} else if err != nil {
			return fail(err)
		}
		a := o.Attempt
		if _, err := tx.ExecContext(ctx, `INSERT INTO delivery_attempts (company_id, endpoint_id, queued_ms, event_id, n, at_ms, status, latency_ms, error, response)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`, o.CompanyID, o.EndpointID, queued, o.EventID, logged, a.At.UnixMilli(), a.Status, a.Latency, a.Error, a.Response); err != nil {
			return fail(err)
		}
		if _, err := tx.ExecContext(ctx, "DELETE FROM delivery_attempts WHERE company_id = $1 AND endpoint_id = $2 AND queued_ms = $3 AND event_id = $4 AND n <= $5",
			o.CompanyID, o.EndpointID, queued, o.EventID, logged-int64(s.cfg.MaxAttempts)); err != nil {
			return fail(err)
		}
	}
	return fail(tx.Commit())
}
