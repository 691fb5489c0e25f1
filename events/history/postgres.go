package history

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/invoicing-ao/gateway/invoicing"
)

// pgStore is the history on PostgreSQL. Its batch writes send arrays
// (unnest) and pipeline their statements (pgx.Batch): a detection step's
// Record is four round trips whatever its size.
type pgStore struct{ *core }

// Record records a detection step (Store). A row for which no partition
// exists yet (maintenance has not run, or the clock jumped ahead) makes
// the partitions and is tried once more.
func (s *pgStore) Record(ctx context.Context, b Batch) (Recorded, error) {
	if err := checkBatch(b); err != nil {
		return Recorded{}, err
	}
	var rec Recorded
	err := s.partitioned(ctx, func() (err error) {
		rec, err = s.record(ctx, b)
		return err
	})
	return rec, fail(err)
}

func (s *pgStore) record(ctx context.Context, b Batch) (Recorded, error) {
	now := s.nowMs()
	tx, err := s.db.Pool().Begin(ctx)
	if err != nil {
		return Recorded{}, err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if moved, err := pgMove(ctx, tx, b.Move); err != nil || moved {
		return Recorded{Moved: moved}, err
	}
	if len(b.Events) == 0 {
		return Recorded{New: []bool{}, Deliveries: []Queued{}}, tx.Commit(ctx)
	}
	heads, marks, err := s.lockAndRead(ctx, tx, b, now)
	if err != nil {
		return Recorded{}, err
	}
	existing, err := s.existing(ctx, tx, s.refoundKeys(b, marks, now), now)
	if err != nil {
		return Recorded{}, err
	}
	p := s.plan(b, heads, marks, existing, now)
	if err := pgWrite(ctx, tx, p); err != nil {
		return Recorded{}, err
	}
	if err := tx.Commit(ctx); err != nil {
		return Recorded{}, err
	}
	return p.recorded(), nil
}

// pgMove is the watermark's compare-and-set: the row is locked by the
// update to the transaction's end, so another detector's waits, then finds
// it moved.
func pgMove(ctx context.Context, tx pgx.Tx, m Move) (moved bool, err error) {
	if m.Stream == "" {
		return false, nil
	}
	tag, err := tx.Exec(ctx, "UPDATE watermarks SET mark = $4 WHERE mode = $1 AND stream = $2 AND mark = $3", string(m.Mode), m.Stream, m.Old, m.Next)
	if err != nil || tag.RowsAffected() == 1 {
		return false, err
	}
	if m.Old != "" {
		return true, nil
	}
	tag, err = tx.Exec(ctx, "INSERT INTO watermarks (mode, stream, mark) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING", string(m.Mode), m.Stream, m.Next)
	return err == nil && tag.RowsAffected() == 0, err
}

// lockAndRead locks the batch's feeds' heads (made when missing), in
// order, then reads the marks of its ids, in one round trip: the marks are
// read once the heads are held, so that another writer of those feeds has
// committed its own.
func (s *pgStore) lockAndRead(ctx context.Context, tx pgx.Tx, b Batch, now int64) (map[feedKey]int64, map[markKey]mark, error) {
	feeds := feedsOf(b)
	cos, modes := make([]string, len(feeds)), make([]string, len(feeds))
	for i, f := range feeds {
		cos[i], modes[i] = f.company, string(f.mode)
	}
	keys := markKeys(b)
	kc, km, ki := make([]string, len(keys)), make([]string, len(keys)), make([]string, len(keys))
	for i, k := range keys {
		kc[i], km[i], ki[i] = k.company, string(k.mode), k.id
	}
	batch := &pgx.Batch{}
	batch.Queue(`INSERT INTO feed_heads (company_id, mode) SELECT * FROM unnest($1::uuid[], $2::text[]) AS f(c, m) ORDER BY c, m
ON CONFLICT DO NOTHING`, cos, modes)
	batch.Queue(`SELECT company_id::text, mode, last_seq FROM feed_heads
WHERE (company_id, mode) IN (SELECT * FROM unnest($1::uuid[], $2::text[])) ORDER BY company_id, mode FOR UPDATE`, cos, modes)
	batch.Queue(`SELECT company_id::text, mode, event_id, marked_ms, seq FROM event_marks
WHERE (company_id, mode, event_id) IN (SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[])) AND marked_ms >= $4`,
		kc, km, ki, now-s.cfg.Remember.Milliseconds())
	br := tx.SendBatch(ctx, batch)
	defer br.Close()
	if _, err := br.Exec(); err != nil {
		return nil, nil, err
	}
	heads := map[feedKey]int64{}
	rows, err := br.Query()
	if err != nil {
		return nil, nil, err
	}
	for rows.Next() {
		var f feedKey
		var mode string
		var last int64
		if err := rows.Scan(&f.company, &mode, &last); err != nil {
			return nil, nil, err
		}
		f.mode = invoicing.Mode(mode)
		heads[f] = last
	}
	if err := rows.Err(); err != nil {
		return nil, nil, err
	}
	marks := map[markKey]mark{}
	rows, err = br.Query()
	if err != nil {
		return nil, nil, err
	}
	for rows.Next() {
		var k markKey
		var mode string
		var m mark
		if err := rows.Scan(&k.company, &mode, &k.id, &m.ms, &m.seq); err != nil {
			return nil, nil, err
		}
		k.mode = invoicing.Mode(mode)
		if had, ok := marks[k]; !ok || m.ms < had.ms {
			marks[k] = m // the first finding
		}
	}
	return heads, marks, rows.Err()
}

// existing reads which of the deliveries keys exist within the retention.
func (s *pgStore) existing(ctx context.Context, tx pgx.Tx, keys []delKey, now int64) (map[delKey]bool, error) {
	out := map[delKey]bool{}
	if len(keys) == 0 {
		return out, nil
	}
	c, e, v := make([]string, len(keys)), make([]string, len(keys)), make([]string, len(keys))
	for i, k := range keys {
		c[i], e[i], v[i] = k.company, k.endpoint, k.id
	}
	rows, err := tx.Query(ctx, `SELECT company_id::text, endpoint_id, event_id FROM deliveries
WHERE (company_id, endpoint_id, event_id) IN (SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[])) AND queued_ms >= $4`, c, e, v, s.kept(now))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var k delKey
		if err := rows.Scan(&k.company, &k.endpoint, &k.id); err != nil {
			return nil, err
		}
		out[k] = true
	}
	return out, rows.Err()
}

// pgWrite writes a plan's rows, in one round trip.
func pgWrite(ctx context.Context, tx pgx.Tx, p plan) error {
	batch := &pgx.Batch{}
	if n := len(p.events); n > 0 {
		c, m, seq, id, typ, res, body := make([]string, n), make([]string, n), make([]int64, n), make([]string, n), make([]string, n), make([]string, n), make([][]byte, n)
		for i, e := range p.events {
			c[i], m[i], seq[i], id[i], typ[i], res[i], body[i] = e.company, string(e.mode), e.seq, e.id, e.typ, e.resource, e.body
		}
		batch.Queue(`INSERT INTO events (company_id, mode, seq, event_id, type, resource_id, body)
SELECT * FROM unnest($1::uuid[], $2::text[], $3::bigint[], $4::text[], $5::text[], $6::text[], $7::bytea[])`, c, m, seq, id, typ, res, body)
	}
	if n := len(p.marks); n > 0 {
		c, m, id, ms, seq := make([]string, n), make([]string, n), make([]string, n), make([]int64, n), make([]int64, n)
		for i, k := range p.marks {
			c[i], m[i], id[i], ms[i], seq[i] = k.company, string(k.mode), k.id, k.ms, k.seq
		}
		batch.Queue(`INSERT INTO event_marks (company_id, mode, event_id, marked_ms, seq)
SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::bigint[], $5::bigint[])`, c, m, id, ms, seq)
	}
	if n := len(p.deliveries); n > 0 {
		c, ep, q, id, m, typ, res, seq, cause, body := make([]string, n), make([]string, n), make([]int64, n), make([]string, n),
			make([]string, n), make([]string, n), make([]string, n), make([]int64, n), make([]string, n), make([][]byte, n)
		for i, d := range p.deliveries {
			c[i], ep[i], q[i], id[i], m[i], typ[i], res[i], seq[i], cause[i], body[i] = d.company, d.endpoint, d.queued, d.id, string(d.mode), d.typ, d.resource, d.seq, d.cause, d.body
			if body[i] == nil {
				body[i] = []byte{}
			}
		}
		batch.Queue(`INSERT INTO deliveries (company_id, endpoint_id, queued_ms, event_id, mode, type, resource_id, seq, state, next_ms, cause, body)
SELECT c, e, q, v, m, t, r, s, 'pending', q, ca, b
FROM unnest($1::uuid[], $2::text[], $3::bigint[], $4::text[], $5::text[], $6::text[], $7::text[], $8::bigint[], $9::text[], $10::bytea[])
  AS x(c, e, q, v, m, t, r, s, ca, b)`, c, ep, q, id, m, typ, res, seq, cause, body)
	}
	var hc, hm []string
	var last, added []int64
	for k, h := range p.heads {
		if h.added > 0 {
			hc, hm, last, added = append(hc, k.company), append(hm, string(k.mode)), append(last, h.last), append(added, h.added)
		}
	}
	if len(hc) > 0 {
		batch.Queue(`UPDATE feed_heads h SET last_seq = v.s, recorded = h.recorded + v.n
FROM unnest($1::uuid[], $2::text[], $3::bigint[], $4::bigint[]) AS v(c, m, s, n) WHERE h.company_id = v.c AND h.mode = v.m`, hc, hm, last, added)
	}
	if batch.Len() == 0 {
		return nil
	}
	return tx.SendBatch(ctx, batch).Close()
}
