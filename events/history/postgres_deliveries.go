package history

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/invoicing-ao/gateway/invoicing"
)

// Fetch reads deliveries to make, with their bodies (Store): one query
// for the lot, each delivery by its index (company, endpoint, event), its
// event's body by the events' primary key.
func (s *pgStore) Fetch(ctx context.Context, keys []DeliveryKey) ([]Fetched, error) {
	out := make([]Fetched, len(keys))
	c, e, v := make([]string, len(keys)), make([]string, len(keys)), make([]string, len(keys))
	for i, k := range keys {
		if err := checkKey(k); err != nil {
			return nil, err
		}
		out[i].DeliveryKey = k
		c[i], e[i], v[i] = k.CompanyID, k.EndpointID, k.EventID
	}
	if len(keys) == 0 {
		return out, nil
	}
	rows, err := s.db.Pool().Query(ctx, `SELECT k.i, d.mode, d.type, d.resource_id, d.state, d.attempts, d.queued_ms, d.cause,
  CASE WHEN length(d.body) > 0 THEN d.body ELSE COALESCE(ev.body, ''::bytea) END
FROM unnest($1::uuid[], $2::text[], $3::text[]) WITH ORDINALITY AS k(c, e, v, i)
JOIN deliveries d ON d.company_id = k.c AND d.endpoint_id = k.e AND d.event_id = k.v AND d.queued_ms >= $4
LEFT JOIN events ev ON d.seq > 0 AND ev.company_id = d.company_id AND ev.mode = d.mode AND ev.seq = d.seq
ORDER BY k.i, d.queued_ms`, c, e, v, s.kept(s.nowMs()))
	if err != nil {
		return nil, fail(err)
	}
	defer rows.Close()
	for rows.Next() {
		var i int64
		var f Fetched
		var mode string
		var attempts int32
		if err := rows.Scan(&i, &mode, &f.Type, &f.ResourceID, &f.State, &attempts, &f.QueuedMs, &f.Cause, &f.Body); err != nil {
			return nil, fail(err)
		}
		f.DeliveryKey, f.Mode, f.Attempts = keys[i-1], invoicing.Mode(mode), int(attempts)
		f.Found = len(f.Body) > 0 // a delivery whose body is gone cannot be made
		out[i-1] = f              // the latest queued, if there were two
	}
	return out, fail(rows.Err())
}

// Complete records outcomes (Store), each in one statement (its attempt
// numbered by the delivery's count of attempts logged, and the oldest
// beyond MaxAttempts dropped), all in one round trip.
func (s *pgStore) Complete(ctx context.Context, outs []Outcome) error {
	for _, o := range outs {
		if err := checkOutcome(o); err != nil {
			return err
		}
	}
	if len(outs) == 0 {
		return nil
	}
	now := s.nowMs()
	batch := &pgx.Batch{}
	for _, o := range outs {
		u := updateOf(o, now)
		args := []any{o.CompanyID, o.EndpointID, o.EventID, s.kept(now), u.state, u.inc, u.next, u.done, u.logged}
		if o.Attempt == nil {
			batch.Queue(`UPDATE deliveries SET state = $5, attempts = attempts + $6, next_ms = $7, done_ms = $8, logged = logged + $9
WHERE company_id = $1 AND endpoint_id = $2 AND event_id = $3 AND queued_ms >= $4`, args...)
			continue
		}
		a := o.Attempt
		args = append(args, a.At.UnixMilli(), int32(a.Status), a.Latency, a.Error, a.Response, int32(s.cfg.MaxAttempts))
		batch.Queue(`WITH d AS (
  UPDATE deliveries SET state = CASE WHEN $5 = '' THEN state ELSE $5 END, attempts = attempts + $6,
    next_ms = CASE WHEN $5 = '' THEN next_ms ELSE $7 END, done_ms = CASE WHEN $5 = '' THEN done_ms ELSE $8 END, logged = logged + $9
  WHERE company_id = $1 AND endpoint_id = $2 AND event_id = $3 AND queued_ms >= $4 RETURNING queued_ms, logged),
a AS (
  INSERT INTO delivery_attempts (company_id, endpoint_id, queued_ms, event_id, n, at_ms, status, latency_ms, error, response)
  SELECT $1, $2, queued_ms, $3, logged, $10, $11, $12, $13, $14 FROM d RETURNING queued_ms, n)
DELETE FROM delivery_attempts x USING a
WHERE x.company_id = $1 AND x.endpoint_id = $2 AND x.queued_ms = a.queued_ms AND x.event_id = $3 AND x.n <= a.n - $15`, args...)
	}
	return fail(s.db.Pool().SendBatch(ctx, batch).Close())
}

// update is what an outcome changes in its delivery: its state ("" for
// none), attempts made (+1 for an attempt of the schedule), next and done
// times (ms), and attempts logged (+1 for any attempt).
type update struct {
	state       string
	inc, logged int32
	next, done  int64
}

func updateOf(o Outcome, now int64) update {
	u := update{state: o.State}
	if o.Attempt != nil {
		u.logged = 1
		if o.State != "" {
			u.inc = 1
		}
	}
	switch o.State {
	case Pending:
		u.next = o.Next.UnixMilli()
	case Delivered, Failed, Expired:
		u.done = now
	}
	return u
}

func checkOutcome(o Outcome) error {
	if err := checkKey(o.DeliveryKey); err != nil {
		return err
	}
	switch {
	case o.State == "" && o.Attempt == nil,
		o.State != "" && o.State != Pending && o.State != Delivered && o.State != Failed && o.State != Expired,
		o.State == Pending && o.Next.IsZero():
		return errInvalidOutcome
	}
	return nil
}
