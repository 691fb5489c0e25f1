package history

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/invoicing-ao/gateway/internal/sqldb"
	"github.com/invoicing-ao/gateway/invoicing"
)

// The delivery log: an endpoint's deliveries newest first, by (queued_ms,
// event_id), the primary key's order after the company and endpoint, read
// backwards. A filter (state, type) reads that order in batches and keeps
// what matches, at most logScan deliveries a page, as the log did in Redis:
// a filter that matches little answers short, with a cursor to go on.

// logScan bounds the deliveries a page of the log reads.
const logScan = 20 * MaxLogPage

// logCursor reads a log cursor ("ms:event id"); ok is false for anything
// else.
func logCursor(c string) (ms int64, id string, ok bool) {
	a, id, found := strings.Cut(c, ":")
	n, err := strconv.ParseInt(a, 10, 64)
	if !found || err != nil || n < 0 || id == "" || len(id) > 64 {
		return 0, "", false
	}
	return n, id, true
}

func cursorOf(ms int64, id string) string { return strconv.FormatInt(ms, 10) + ":" + id }

func checkKey(k DeliveryKey) error {
	if !canonicalID(k.CompanyID) || k.EndpointID == "" || k.EventID == "" {
		return errors.New("history: a delivery needs a canonical company id, an endpoint and an event")
	}
	return nil
}

const deliveryCols = "queued_ms, event_id, mode, type, resource_id, state, attempts, next_ms, done_ms"

// logRow is a delivery as the log reads it, before its attempts.
type logRow struct {
	Delivery
	queued int64
}

func scanDeliveries(rows sqldb.Rows) ([]logRow, error) {
	defer rows.Close()
	var out []logRow
	for rows.Next() {
		var d logRow
		var mode string
		var attempts, next, done int64
		if err := rows.Scan(&d.queued, &d.EventID, &mode, &d.Type, &d.ResourceID, &d.State, &attempts, &next, &done); err != nil {
			return nil, err
		}
		d.Mode, d.Attempts, d.QueuedAt = invoicing.Mode(mode), int(attempts), time.UnixMilli(d.queued).UTC()
		d.NextAttemptAt, d.DoneAt = msTime(next), msTime(done)
		d.Log = []Attempt{}
		out = append(out, d)
	}
	return out, rows.Err()
}

// msTime is a time in ms, nil for 0 (none).
func msTime(ms int64) *time.Time {
	if ms == 0 {
		return nil
	}
	t := time.UnixMilli(ms).UTC()
	return &t
}

// Log reads a page of an endpoint's delivery log (Store).
func (c *core) Log(ctx context.Context, q LogQuery) (LogPage, error) {
	if err := checkKey(DeliveryKey{q.CompanyID, q.EndpointID, "-"}); err != nil {
		return LogPage{}, err
	}
	if q.State != "" && !slices.Contains(States, q.State) {
		return LogPage{}, invoicing.InvalidField(ErrInvalidQuery, "state", "must be one of %s", strings.Join(States, ", "))
	}
	afterMs, afterID := int64(maxSeq), ""
	if q.Cursor != "" {
		var ok bool
		if afterMs, afterID, ok = logCursor(q.Cursor); !ok {
			return LogPage{}, invoicing.InvalidField(ErrInvalidQuery, "cursor", "must be a page's next, as answered")
		}
	}
	limit := q.Limit
	if limit <= 0 {
		limit = 20
	}
	limit = min(limit, MaxLogPage)
	batch := limit
	if q.State != "" || q.Type != "" {
		batch = 2 * limit
	}
	r := c.db.Read()
	page := LogPage{Deliveries: make([]Delivery, 0, limit)}
	var kept []logRow
	for read := 0; read < logScan; {
		rows, err := r.Query(ctx, "SELECT "+deliveryCols+` FROM deliveries
WHERE company_id = $1 AND endpoint_id = $2 AND queued_ms >= $3 AND (queued_ms, event_id) < ($4, $5)
ORDER BY queued_ms DESC, event_id DESC LIMIT $6`, q.CompanyID, q.EndpointID, c.kept(c.nowMs()), afterMs, afterID, int64(batch+1))
		if err != nil {
			return LogPage{}, fail(err)
		}
		ds, err := scanDeliveries(rows)
		if err != nil {
			return LogPage{}, fail(err)
		}
		more := len(ds) > batch
		ds = ds[:min(len(ds), batch)]
		for i, d := range ds {
			read++
			if (q.State != "" && d.State != q.State) || (q.Type != "" && d.Type != q.Type) {
				continue
			}
			kept = append(kept, d)
			if len(kept) == limit {
				page.Next = ""
				if more || i < len(ds)-1 {
					page.Next = cursorOf(d.queued, d.EventID)
				}
				return c.withAttempts(ctx, r, q, kept, page)
			}
		}
		if !more {
			page.Next = "" // the log ends here
			return c.withAttempts(ctx, r, q, kept, page)
		}
		last := ds[len(ds)-1]
		afterMs, afterID = last.queued, last.EventID
		page.Next = cursorOf(afterMs, afterID) // the scan's bound was reached
	}
	return c.withAttempts(ctx, r, q, kept, page)
}

// withAttempts completes a page with its deliveries' attempts.
func (c *core) withAttempts(ctx context.Context, r sqldb.Querier, q LogQuery, ds []logRow, page LogPage) (LogPage, error) {
	if len(ds) == 0 {
		return page, nil
	}
	var where strings.Builder
	args := []any{q.CompanyID, q.EndpointID}
	for i, d := range ds {
		if i > 0 {
			where.WriteString(" OR ")
		}
		n := len(args)
		where.WriteString("(queued_ms = $" + strconv.Itoa(n+1) + " AND event_id = $" + strconv.Itoa(n+2) + ")")
		args = append(args, d.queued, d.EventID)
	}
	at, err := c.attempts(ctx, r, "company_id = $1 AND endpoint_id = $2 AND ("+where.String()+")", args)
	if err != nil {
		return LogPage{}, fail(err)
	}
	for _, d := range ds {
		if a := at[cursorOf(d.queued, d.EventID)]; a != nil {
			d.Log = a
		}
		page.Deliveries = append(page.Deliveries, d.Delivery)
	}
	return page, nil
}

// attempts reads the attempts the condition selects, by delivery
// ("queued_ms:event_id"), oldest first.
func (c *core) attempts(ctx context.Context, r sqldb.Querier, cond string, args []any) (map[string][]Attempt, error) {
	rows, err := r.Query(ctx, "SELECT queued_ms, event_id, at_ms, status, latency_ms, error, response FROM delivery_attempts WHERE "+cond+
		" ORDER BY queued_ms, event_id, n", args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string][]Attempt{}
	for rows.Next() {
		var queued, at, status int64
		var id string
		var a Attempt
		if err := rows.Scan(&queued, &id, &at, &status, &a.Latency, &a.Error, &a.Response); err != nil {
			return nil, err
		}
		a.At, a.Status = time.UnixMilli(at).UTC(), int(status)
		k := cursorOf(queued, id)
		out[k] = append(out[k], a)
	}
	return out, rows.Err()
}

// Delivery reads one delivery with its attempts (Store).
func (c *core) Delivery(ctx context.Context, k DeliveryKey) (Delivery, error) {
	if err := checkKey(k); err != nil {
		return Delivery{}, err
	}
	r := c.db.Read()
	rows, err := r.Query(ctx, "SELECT "+deliveryCols+` FROM deliveries
WHERE company_id = $1 AND endpoint_id = $2 AND event_id = $3 AND queued_ms >= $4 ORDER BY queued_ms DESC LIMIT 1`,
		k.CompanyID, k.EndpointID, k.EventID, c.kept(c.nowMs()))
	if err != nil {
		return Delivery{}, fail(err)
	}
	ds, err := scanDeliveries(rows)
	if err != nil {
		return Delivery{}, fail(err)
	}
	if len(ds) == 0 {
		return Delivery{}, ErrNotFound
	}
	d := ds[0]
	at, err := c.attempts(ctx, r, "company_id = $1 AND endpoint_id = $2 AND queued_ms = $3 AND event_id = $4",
		[]any{k.CompanyID, k.EndpointID, d.queued, k.EventID})
	if err != nil {
		return Delivery{}, fail(err)
	}
	if a := at[cursorOf(d.queued, d.EventID)]; a != nil {
		d.Log = a
	}
	return d.Delivery, nil
}
