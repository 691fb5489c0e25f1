package audit

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/invoicing-ao/gateway/internal/sqldb"
)

// The log's rows, and the SQL both engines run alike ($N placeholders,
// bigint, text; NULLs avoided: an absent key, webhook or view is "").

const (
	// perMs is how many seqs a millisecond holds: seq = ms×1000 + k.
	perMs = 1000
	// maxMs is the last millisecond a seq can hold (an id's ms has at most
	// 15 digits, well within int64 once multiplied).
	maxMs = 999_999_999_999_999
)

// idOf is the id shown for seq: "ms-k".
func idOf(seq int64) string {
	return strconv.FormatInt(seq/perMs, 10) + "-" + strconv.FormatInt(seq%perMs, 10)
}

// seqOf is the seq of an id "ms-k"; false when it is not one the log can
// hold (k of 1000 or more, which a company's log never makes in one
// millisecond).
func seqOf(id string) (int64, bool) {
	a, b, ok := strings.Cut(id, "-")
	if !ok {
		return 0, false
	}
	ms, err1 := strconv.ParseInt(a, 10, 64)
	k, err2 := strconv.ParseInt(b, 10, 64)
	if err1 != nil || err2 != nil || ms < 0 || ms > maxMs || k < 0 || k >= perMs {
		return 0, false
	}
	return ms*perMs + k, true
}

// row is an entry as the table keeps it.
type row struct {
	seq, atMs                   int64
	actor, action, key, webhook string
	before, after               string
	company                     string
}

func rowOf(company string, seq int64, e Entry) row {
	return row{seq: seq, atMs: e.Time.UnixMilli(), actor: e.Actor, action: e.Action, key: e.KeyID, webhook: e.WebhookID,
		before: string(e.Before), after: string(e.After), company: company}
}

// event is a row read back, with its seq for paging.
type event struct {
	Event
	seq int64
}

// headSQL takes the company's head (made when missing) and moves it to
// the seq of a new entry, max(last + 1, $2), counting it: the row stays
// locked to the transaction's end, so the company's writers take turns.
func headSQL(e sqldb.Engine) string {
	greatest := "greatest"
	if e == sqldb.SQLite {
		greatest = "max"
	}
	return `INSERT INTO audit_heads AS h (company_id, last_seq, entries) VALUES ($1, $2, 1)
ON CONFLICT (company_id) DO UPDATE SET last_seq = ` + greatest + `(h.last_seq + 1, $2), entries = h.entries + 1
RETURNING last_seq, entries`
}

// insert records e in q's transaction: its seq from the head, then the
// row, then the bound (trim).
func (l *Log) insert(ctx context.Context, q sqldb.Querier, e Entry) (Event, error) {
	now := l.now()
	if e.Time.IsZero() {
		e.Time = now
	}
	var seq, entries int64
	if err := sqldb.QueryRow(ctx, q, headSQL(q.Engine()), []any{e.CompanyID, min(now.UnixMilli(), maxMs) * perMs}, &seq, &entries); err != nil {
		return Event{}, err
	}
	if _, err := insertRows(ctx, q, []row{rowOf(e.CompanyID, seq, e)}); err != nil {
		return Event{}, err
	}
	if entries > int64(l.max) {
		if err := l.trim(ctx, q, e.CompanyID); err != nil {
			return Event{}, err
		}
	}
	ev := Event{ID: idOf(seq), Time: time.UnixMilli(e.Time.UnixMilli()).UTC(), Actor: e.Actor, CompanyID: e.CompanyID,
		Action: e.Action, Before: e.Before, After: e.After}
	if e.KeyID != "" {
		ev.KeyID = &e.KeyID
	}
	if e.WebhookID != "" {
		ev.WebhookID = &e.WebhookID
	}
	return ev, nil
}

// trim keeps the company's newest MaxPerCompany entries. The head counts
// entries as they are added; entries that retention dropped are still
// counted, so when nothing is beyond the bound the count is made again
// (at most the bound's rows, and once: it is then exact).
func (l *Log) trim(ctx context.Context, q sqldb.Querier, company string) error {
	n, err := q.Exec(ctx, `DELETE FROM audit_entries WHERE company_id = $1 AND seq <= (
  SELECT seq FROM audit_entries WHERE company_id = $1 ORDER BY seq DESC LIMIT 1 OFFSET $2)`, company, int64(l.max))
	if err != nil {
		return err
	}
	if n > 0 {
		_, err = q.Exec(ctx, "UPDATE audit_heads SET entries = $2 WHERE company_id = $1", company, int64(l.max))
		return err
	}
	_, err = q.Exec(ctx, "UPDATE audit_heads SET entries = (SELECT count(*) FROM audit_entries WHERE company_id = $1) WHERE company_id = $1", company)
	return err
}

// rowsPerInsert bounds one INSERT's rows: 9 arguments each, well within
// both engines' limits on arguments.
const rowsPerInsert = 200

// insertRows inserts rows, those whose (company, seq) is taken left as
// they are, and reports how many it added.
func insertRows(ctx context.Context, q sqldb.Querier, rows []row) (int64, error) {
	var added int64
	for len(rows) > 0 {
		chunk := rows[:min(len(rows), rowsPerInsert)]
		rows = rows[len(chunk):]
		var sb strings.Builder
		sb.WriteString("INSERT INTO audit_entries (company_id, seq, at_ms, actor, action, key_id, webhook_id, before_json, after_json) VALUES ")
		args := make([]any, 0, 9*len(chunk))
		for i, r := range chunk {
			if i > 0 {
				sb.WriteString(", ")
			}
			sb.WriteString("(")
			for j := range 9 {
				if j > 0 {
					sb.WriteString(", ")
				}
				sb.WriteString("$" + strconv.Itoa(len(args)+j+1))
			}
			sb.WriteString(")")
			args = append(args, r.company, r.seq, r.atMs, r.actor, r.action, r.key, r.webhook, r.before, r.after)
		}
		sb.WriteString(" ON CONFLICT (company_id, seq) DO NOTHING")
		n, err := q.Exec(ctx, sb.String(), args...)
		if err != nil {
			return added, err
		}
		added += n
	}
	return added, nil
}

// page reads up to n of a company's entries with lo <= seq < hi, oldest
// first.
func (l *Log) page(ctx context.Context, q sqldb.Querier, company string, lo, hi int64, n int) ([]event, error) {
	rows, err := q.Query(ctx, `SELECT seq, at_ms, actor, action, key_id, webhook_id, before_json, after_json FROM audit_entries
WHERE company_id = $1 AND seq >= $2 AND seq < $3 ORDER BY seq LIMIT $4`, company, lo, hi, int64(n))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []event
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.seq, &r.atMs, &r.actor, &r.action, &r.key, &r.webhook, &r.before, &r.after); err != nil {
			return nil, err
		}
		out = append(out, event{Event: r.event(company), seq: r.seq})
	}
	return out, rows.Err()
}

// event is the row as an Event of company.
func (r row) event(company string) Event {
	ev := Event{ID: idOf(r.seq), Time: time.UnixMilli(r.atMs).UTC(), Actor: r.actor, CompanyID: company, Action: r.action}
	if r.key != "" {
		k := r.key
		ev.KeyID = &k
	}
	if r.webhook != "" {
		w := r.webhook
		ev.WebhookID = &w
	}
	if r.before != "" {
		ev.Before = json.RawMessage(r.before)
	}
	if r.after != "" {
		ev.After = json.RawMessage(r.after)
	}
	return ev
}

// insertGiven adds rows that have their ids already (an older export's,
// the Redis streams' of an upgrade) to one company's log, each in its
// place: the head is taken first and moved to the last of them when they
// are ahead of it, so that no entry recorded meanwhile takes one of their
// seqs. It reports how many were added (the others were there).
func insertGiven(ctx context.Context, q sqldb.Querier, company string, rows []row) (int64, error) {
	if len(rows) == 0 {
		return 0, nil
	}
	var top int64
	for _, r := range rows {
		top = max(top, r.seq)
	}
	greatest := "greatest"
	if q.Engine() == sqldb.SQLite {
		greatest = "max"
	}
	if _, err := q.Exec(ctx, `INSERT INTO audit_heads AS h (company_id, last_seq, entries) VALUES ($1, $2, 0)
ON CONFLICT (company_id) DO UPDATE SET last_seq = `+greatest+`(h.last_seq, $2)`, company, top); err != nil {
		return 0, err
	}
	added, err := insertRows(ctx, q, rows)
	if err != nil {
		return 0, err
	}
	_, err = q.Exec(ctx, "UPDATE audit_heads SET entries = entries + $2 WHERE company_id = $1", company, added)
	return added, err
}

// partitioned runs a write, again once the partitions are made if it was
// refused for want of one (PostgreSQL: maintenance has not run yet, or the
// clock moved past the partitions made ahead).
func (l *Log) partitioned(ctx context.Context, write func() error) error {
	err := write()
	if l.db.Engine() == sqldb.Postgres && sqldb.NoPartition(err) {
		if _, err = l.ensure(ctx); err == nil {
			err = write()
		}
	}
	return err
}
