package history

import (
	"context"
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/invoicing-ao/gateway/internal/sqldb"
	"github.com/invoicing-ao/gateway/invoicing"
)

// A feed page reads what it returns: one ordered index scan, bounded by
// the page's size, per type asked (the primary key (company, mode, seq)
// without a filter; (company, mode, type, seq) with one); several types
// are a UNION ALL of one such scan each, merged in order, never a sort of
// the company's events. since, until and the cursor are bounds on seq, the
// partition key, so that PostgreSQL reads only the partitions they cover.
// The EXPLAIN test (explain_test.go) holds the plans to this.

// maxTypes bounds a page's type filter: a scan each.
const maxTypes = 16

// maxSeq is the greatest seq: a position beyond it is no feed's.
const maxSeq = math.MaxInt64

// seqOf is a position's seq; false when no feed can have it (a sequence of
// 1000 or more within a millisecond, or beyond int64).
func seqOf(p invoicing.FeedPosition) (int64, bool) {
	if p.Seq >= 1000 || p.Ms > (maxSeq-p.Seq)/1000 {
		return 0, false
	}
	return int64(p.Ms*1000 + p.Seq), true
}

func positionOf(seq int64) invoicing.FeedPosition {
	return invoicing.FeedPosition{Ms: uint64(seq / 1000), Seq: uint64(seq % 1000)}
}

// msSeq is the first seq of millisecond ms (clamped to the seqs there are).
func msSeq(ms int64) int64 {
	switch {
	case ms <= 0:
		return 0
	case ms > maxSeq/1000:
		return maxSeq
	}
	return ms * 1000
}

// feedBounds are a query's seq bounds, [lo, hi), with its cursor's, and
// the cursor's seq (-1 for none).
func feedBounds(q invoicing.FeedQuery) (lo, hi, after int64, err error) {
	lo, hi, after = 0, maxSeq, -1
	if q.Since != nil {
		lo = msSeq(q.Since.UnixMilli())
	}
	if q.Until != nil {
		hi = msSeq(q.Until.UnixMilli())
	}
	if q.After != nil {
		var ok bool
		if after, ok = seqOf(*q.After); !ok {
			return 0, 0, 0, invoicing.InvalidField(ErrInvalidQuery, "cursor", "is not a position of this feed")
		}
		if q.Newest {
			hi = min(hi, after)
		} else if after == maxSeq {
			lo = maxSeq // nothing after it: an empty range
		} else {
			lo = max(lo, after+1)
		}
	}
	return lo, hi, after, nil
}

func checkFeedQuery(q invoicing.FeedQuery) ([]string, error) {
	if !canonicalID(q.CompanyID) || !q.Mode.Valid() {
		return nil, errors.New("history: a feed query needs a canonical company id and a mode")
	}
	if q.Limit < 1 || q.Limit > 100 {
		return nil, invoicing.InvalidField(ErrInvalidQuery, "pageSize", "must be an integer from 1 to 100")
	}
	var types []string
	for _, t := range q.Types {
		if t == "" || len(t) > 64 {
			return nil, invoicing.InvalidField(ErrInvalidQuery, "type", "must be event types: %q is not one", invoicing.Clip(t))
		}
		if !slices.Contains(types, t) {
			types = append(types, t)
		}
	}
	if len(types) > maxTypes {
		return nil, invoicing.InvalidField(ErrInvalidQuery, "type", "must name at most %d types", maxTypes)
	}
	return types, nil
}

// ReadFeed reads a page of a feed (Store).
func (c *core) ReadFeed(ctx context.Context, q invoicing.FeedQuery) (FeedPage, error) {
	types, err := checkFeedQuery(q)
	if err != nil {
		return FeedPage{}, err
	}
	lo, hi, after, err := feedBounds(q)
	if err != nil {
		return FeedPage{}, err
	}
	r := c.db.Read()
	if !q.Newest && q.After != nil {
		// Oldest first from a cursor: refused when events after it were
		// dropped (the walk would skip them). Read before the page, so
		// that a drop meanwhile errs on the safe side.
		cut, err := c.feedCut(ctx, r, q.CompanyID, q.Mode)
		if err != nil {
			return FeedPage{}, fail(err)
		}
		if after < cut {
			return FeedPage{}, invoicing.InvalidField(ErrInvalidQuery, "cursor",
				"is older than the feed's window (%s): events after it were dropped; start again without a cursor, and sync what changed meanwhile with updatedSince", c.cfg.FeedWindow)
		}
	}
	p := FeedPage{Rows: make([]FeedRow, 0, q.Limit)}
	if lo < hi {
		sql, args := feedSQL(q.CompanyID, q.Mode, types, q.Newest, lo, hi, q.Limit+1)
		if p.Rows, err = scanFeed(ctx, r, sql, args, q.Limit+1); err != nil {
			return FeedPage{}, fail(err)
		}
	}
	if len(p.Rows) > q.Limit {
		p.Rows, p.HasMore = p.Rows[:q.Limit], true
	}
	switch {
	case len(p.Rows) > 0:
		last := p.Rows[len(p.Rows)-1].Position
		p.Next = &last
	case q.After != nil:
		next := *q.After // nothing read: ask again from where this began
		p.Next = &next
	case !q.Newest:
		// A first read that found nothing goes on from the last event
		// dropped, or the very start: a poller's next read finds what comes.
		cut, err := c.feedCut(ctx, r, q.CompanyID, q.Mode)
		if err != nil {
			return FeedPage{}, fail(err)
		}
		start := positionOf(max(cut, 0))
		p.Next = &start
	}
	if q.Newest && !p.HasMore {
		p.Next = nil // the oldest was reached
	}
	return p, nil
}

// feedCut is the seq of the last event dropped from a feed, -1 for none.
func (c *core) feedCut(ctx context.Context, r sqldb.Querier, company string, m invoicing.Mode) (int64, error) {
	var cut int64
	err := sqldb.QueryRow(ctx, r, "SELECT cut_seq FROM feed_cuts WHERE company_id = $1 AND mode = $2", []any{company, string(m)}, &cut)
	if errors.Is(err, sqldb.ErrNoRows) {
		return -1, nil
	}
	return cut, err
}

// feedSQL is a page's query: $1 company, $2 mode, $3 and $4 the seq
// bounds [lo, hi), $5 the rows to read, then the types.
func feedSQL(company string, m invoicing.Mode, types []string, newest bool, lo, hi int64, n int) (string, []any) {
	order := "seq"
	if newest {
		order = "seq DESC"
	}
	const cols = "SELECT seq, event_id, body FROM events WHERE company_id = $1 AND mode = $2 AND seq >= $3 AND seq < $4"
	args := []any{company, string(m), lo, hi, int64(n)}
	var b strings.Builder
	switch len(types) {
	case 0:
		b.WriteString(cols)
	case 1:
		b.WriteString(cols + " AND type = $6")
		args = append(args, types[0])
	default:
		for i, t := range types {
			if i > 0 {
				b.WriteString(" UNION ALL ")
			}
			arg := "$" + strconv.Itoa(6+i)
			b.WriteString("SELECT seq, event_id, body FROM (" + cols + " AND type = " + arg + " ORDER BY " + order + " LIMIT $5) t" + strconv.Itoa(i))
			args = append(args, t)
		}
	}
	b.WriteString(" ORDER BY " + order + " LIMIT $5")
	return b.String(), args
}

func scanFeed(ctx context.Context, r sqldb.Querier, sql string, args []any, n int) ([]FeedRow, error) {
	rows, err := r.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make([]FeedRow, 0, n)
	for rows.Next() {
		var seq int64
		var row FeedRow
		if err := rows.Scan(&seq, &row.EventID, &row.Body); err != nil {
			return nil, err
		}
		row.Position = positionOf(seq)
		out = append(out, row)
	}
	return out, rows.Err()
}
