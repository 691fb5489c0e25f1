package history

import (
	"context"
	"errors"
	"sort"
	"time"

	"github.com/invoicing-ao/gateway/internal/sqldb"
	"github.com/invoicing-ao/gateway/invoicing"
)

// Detection's watermarks, as it kept them in Redis (wm:<mode>:<stream>):
// the same strings, Rewind included. Record moves one by compare-and-set;
// these read and set them whatever they are.

// Watermarks reads a mode's watermarks (Store).
func (c *core) Watermarks(ctx context.Context, m invoicing.Mode) (map[string]string, error) {
	rows, err := c.db.Read().Query(ctx, "SELECT stream, mark FROM watermarks WHERE mode = $1", string(m))
	if err != nil {
		return nil, fail(err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var s, mark string
		if err := rows.Scan(&s, &mark); err != nil {
			return nil, fail(err)
		}
		out[s] = mark
	}
	return out, fail(rows.Err())
}

// SetWatermarks sets watermarks (Store), in one transaction.
func (c *core) SetWatermarks(ctx context.Context, m invoicing.Mode, marks map[string]string) error {
	if !m.Valid() {
		return errors.New("history: watermarks need a mode")
	}
	streams := make([]string, 0, len(marks))
	for s := range marks {
		if s == "" || marks[s] == "" {
			return errors.New("history: a watermark needs a stream and a mark")
		}
		streams = append(streams, s)
	}
	sort.Strings(streams) // rows locked in one order
	err := c.db.Tx(ctx, func(q sqldb.Querier) error {
		for _, s := range streams {
			if _, err := q.Exec(ctx, `INSERT INTO watermarks (mode, stream, mark) VALUES ($1, $2, $3)
ON CONFLICT (mode, stream) DO UPDATE SET mark = excluded.mark`, string(m), s, marks[s]); err != nil {
				return err
			}
		}
		return nil
	})
	return fail(err)
}

// Rewind sets streams' watermarks to Rewind (Store).
func (c *core) Rewind(ctx context.Context, m invoicing.Mode, streams ...string) error {
	marks := make(map[string]string, len(streams))
	for _, s := range streams {
		marks[s] = Rewind
	}
	return c.SetWatermarks(ctx, m, marks)
}

// Stats reads the feeds' sizes (Store): a feed's events within the window
// are those its head counted less those its cuts dropped, so that no count
// reads the events themselves.
func (c *core) Stats(ctx context.Context, top int) (Stats, error) {
	const sizes = `FROM feed_heads h LEFT JOIN feed_cuts c ON c.company_id = h.company_id AND c.mode = h.mode`
	r := c.db.Read()
	var st Stats
	err := sqldb.QueryRow(ctx, r, "SELECT count(*), CAST(COALESCE(sum(h.recorded - COALESCE(c.dropped, 0)), 0) AS bigint) "+sizes, nil, &st.Feeds, &st.Events)
	if err != nil {
		return Stats{}, fail(err)
	}
	if top <= 0 {
		return st, nil
	}
	rows, err := r.Query(ctx, "SELECT h.company_id, h.mode, h.recorded - COALESCE(c.dropped, 0) AS n, h.last_seq "+sizes+
		" ORDER BY n DESC, h.company_id, h.mode LIMIT $1", int64(top))
	if err != nil {
		return Stats{}, fail(err)
	}
	defer rows.Close()
	for rows.Next() {
		var f FeedSize
		var mode string
		var last int64
		if err := rows.Scan(&f.CompanyID, &mode, &f.Events, &last); err != nil {
			return Stats{}, fail(err)
		}
		f.Mode, f.LastAt = invoicing.Mode(mode), time.UnixMilli(last/1000).UTC()
		st.Largest = append(st.Largest, f)
	}
	return st, fail(rows.Err())
}
