package history

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/invoicing-ao/gateway/internal/sqldb"
)

// Deliveries queued again (a replay, a recovery), test deliveries, and the
// pending ones a queue that lost them reads back: the same SQL on both
// engines. What is being delivered right now (the queue's leases) is the
// queue's to know: its caller checks it first.

// Replay queues a delivery again (Store).
func (c *core) Replay(ctx context.Context, k DeliveryKey) (Queued, error) {
	if err := checkKey(k); err != nil {
		return Queued{}, err
	}
	now := c.nowMs()
	var out Queued
	err := c.db.Tx(ctx, func(q sqldb.Querier) error {
		var queued, seq, own int64
		var mode string
		err := sqldb.QueryRow(ctx, q, `SELECT queued_ms, mode, seq, length(body) FROM deliveries
WHERE company_id = $1 AND endpoint_id = $2 AND event_id = $3 AND queued_ms >= $4 ORDER BY queued_ms DESC LIMIT 1`,
			[]any{k.CompanyID, k.EndpointID, k.EventID, c.kept(now)}, &queued, &mode, &seq, &own)
		if errors.Is(err, sqldb.ErrNoRows) {
			return ErrNotFound
		} else if err != nil {
			return err
		}
		if own == 0 {
			// Its body is its event's: gone with the event's partition.
			var n int64
			err := sqldb.QueryRow(ctx, q, "SELECT count(*) FROM events WHERE company_id = $1 AND mode = $2 AND seq = $3",
				[]any{k.CompanyID, mode, seq}, &n)
			if err != nil {
				return err
			}
			if n == 0 {
				return ErrGone
			}
		}
		_, err = q.Exec(ctx, `UPDATE deliveries SET state = 'pending', attempts = 0, next_ms = $5, done_ms = 0
WHERE company_id = $1 AND endpoint_id = $2 AND queued_ms = $3 AND event_id = $4`, k.CompanyID, k.EndpointID, queued, k.EventID, now)
		out = Queued{CompanyID: k.CompanyID, EndpointID: k.EndpointID, EventID: k.EventID, QueuedMs: queued, DueMs: now}
		return err
	})
	return out, fail(err)
}

// Recover queues again a page of an endpoint's failed or waiting
// deliveries (Store).
func (c *core) Recover(ctx context.Context, rq RecoverQuery) (Recovered, error) {
	if err := checkKey(DeliveryKey{rq.CompanyID, rq.EndpointID, "-"}); err != nil {
		return Recovered{}, err
	}
	afterMs, afterID := int64(maxSeq), ""
	if rq.Cursor != "" {
		var ok bool
		if afterMs, afterID, ok = logCursor(rq.Cursor); !ok {
			return Recovered{}, errors.New("history: a recovery's cursor must be a page's next")
		}
	}
	limit := rq.Limit
	if limit <= 0 {
		limit = 500
	}
	now := c.nowMs()
	since := max(rq.Since.UnixMilli(), c.kept(now))
	var out Recovered
	err := c.db.Tx(ctx, func(q sqldb.Querier) error {
		todo, next, err := recoverable(ctx, q, rq, since, afterMs, afterID, limit, now)
		if err != nil {
			return err
		}
		out, err = requeueAll(ctx, q, rq, todo, now)
		out.Next = next
		return err
	})
	return out, fail(err)
}

// recoverRow is a delivery a recovery queues again.
type recoverRow struct {
	queued int64
	id     string
	failed bool
}

// recoverable reads a page of limit deliveries, newest first, and keeps
// those failed or waiting for a retry (their next attempt later than now;
// one due now is queued already, or being made). next is where the next
// page starts, "" when this was the last.
func recoverable(ctx context.Context, q sqldb.Querier, rq RecoverQuery, since, afterMs int64, afterID string, limit int, now int64) ([]recoverRow, string, error) {
	rows, err := q.Query(ctx, `SELECT queued_ms, event_id, state, next_ms FROM deliveries
WHERE company_id = $1 AND endpoint_id = $2 AND queued_ms >= $3 AND (queued_ms, event_id) < ($4, $5)
ORDER BY queued_ms DESC, event_id DESC LIMIT $6`, rq.CompanyID, rq.EndpointID, since, afterMs, afterID, int64(limit))
	if err != nil {
		return nil, "", err
	}
	defer rows.Close()
	var todo []recoverRow
	var last recoverRow
	read := 0
	for rows.Next() {
		var r recoverRow
		var state string
		var next int64
		if err := rows.Scan(&r.queued, &r.id, &state, &next); err != nil {
			return nil, "", err
		}
		read, last = read+1, r
		if r.failed = state == Failed; r.failed || state == Pending && next > now {
			todo = append(todo, r)
		}
	}
	if read < limit {
		return todo, "", rows.Err()
	}
	return todo, cursorOf(last.queued, last.id), rows.Err()
}

// requeueAll queues todo again. The states are read again as they are
// changed: a delivery that moved meanwhile (delivered) is left as it is.
func requeueAll(ctx context.Context, q sqldb.Querier, rq RecoverQuery, todo []recoverRow, now int64) (Recovered, error) {
	var out Recovered
	if len(todo) == 0 {
		return out, nil
	}
	var where strings.Builder
	args := []any{rq.CompanyID, rq.EndpointID, now}
	failed := map[string]bool{}
	for i, r := range todo {
		if i > 0 {
			where.WriteString(" OR ")
		}
		n := len(args)
		where.WriteString("(queued_ms = $" + strconv.Itoa(n+1) + " AND event_id = $" + strconv.Itoa(n+2) + ")")
		args = append(args, r.queued, r.id)
		failed[cursorOf(r.queued, r.id)] = r.failed
	}
	rows, err := q.Query(ctx, `UPDATE deliveries SET state = 'pending', attempts = 0, next_ms = $3, done_ms = 0
WHERE company_id = $1 AND endpoint_id = $2 AND (`+where.String()+`) AND (state = 'failed' OR (state = 'pending' AND next_ms > $3))
RETURNING queued_ms, event_id`, args...)
	if err != nil {
		return out, err
	}
	defer rows.Close()
	for rows.Next() {
		qd := Queued{CompanyID: rq.CompanyID, EndpointID: rq.EndpointID, DueMs: now}
		if err := rows.Scan(&qd.QueuedMs, &qd.EventID); err != nil {
			return out, err
		}
		out.Queued = append(out.Queued, qd)
		if failed[cursorOf(qd.QueuedMs, qd.EventID)] {
			out.Failed++
		} else {
			out.Waiting++
		}
	}
	return out, rows.Err()
}

// AddTest queues a test delivery (Store).
func (c *core) AddTest(ctx context.Context, d TestDelivery) (Queued, error) {
	if err := checkKey(DeliveryKey{d.CompanyID, d.EndpointID, d.EventID}); err != nil || !d.Mode.Valid() || d.Type == "" || len(d.Body) < 2 {
		return Queued{}, errors.New("history: a test delivery needs a company, mode, endpoint, event id, type and body")
	}
	now := c.nowMs()
	err := c.partitioned(ctx, func() error {
		return c.db.Tx(ctx, func(q sqldb.Querier) error {
			_, err := q.Exec(ctx, `INSERT INTO deliveries (company_id, endpoint_id, queued_ms, event_id, mode, type, resource_id, state, next_ms, cause, body)
VALUES ($1, $2, $3, $4, $5, $6, $7, 'pending', $3, $8, $9)`, d.CompanyID, d.EndpointID, now, d.EventID, string(d.Mode), d.Type, d.ResourceID, d.Cause, d.Body)
			return err
		})
	})
	if err != nil {
		return Queued{}, fail(err)
	}
	return Queued{CompanyID: d.CompanyID, EndpointID: d.EndpointID, EventID: d.EventID, QueuedMs: now, DueMs: now}, nil
}

// Pending pages through the pending deliveries (Store), by (queued_ms,
// company, endpoint, event), the partial index deliveries_pending.
func (c *core) Pending(ctx context.Context, after *Queued, limit int) ([]Queued, error) {
	limit = min(max(limit, 1), 10000)
	since := c.kept(c.nowMs())
	sql := `SELECT company_id, endpoint_id, event_id, queued_ms, next_ms FROM deliveries WHERE state = 'pending' AND queued_ms >= $1`
	args := []any{since}
	if after != nil {
		sql += " AND (queued_ms, company_id, endpoint_id, event_id) > ($3, $4, $5, $6)"
		args = append(args, 0, after.QueuedMs, after.CompanyID, after.EndpointID, after.EventID)
	} else {
		args = append(args, 0)
	}
	args[1] = int64(limit)
	sql += " ORDER BY queued_ms, company_id, endpoint_id, event_id LIMIT $2"
	rows, err := c.db.Read().Query(ctx, sql, args...)
	if err != nil {
		return nil, fail(err)
	}
	defer rows.Close()
	out := make([]Queued, 0, limit)
	for rows.Next() {
		var qd Queued
		if err := rows.Scan(&qd.CompanyID, &qd.EndpointID, &qd.EventID, &qd.QueuedMs, &qd.DueMs); err != nil {
			return nil, fail(err)
		}
		out = append(out, qd)
	}
	return out, fail(rows.Err())
}
