package history

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// loadMix is the types of a loaded feed, by share: most invoices paid,
// some issued, a few clients, and a rare cancellation.
var loadMix = []struct {
	typ   string
	every int // one event in every
}{{"invoice.cancelled", 100}, {"client.created", 11}, {"invoice.issued", 3}, {"invoice.paid", 1}}

func loadType(i int) string {
	for _, m := range loadMix {
		if i%m.every == 0 {
			return m.typ
		}
	}
	return "invoice.paid"
}

// loadBody is a body of a realistic size (about 700 bytes, as the
// platform's invoices make).
func loadBody(id, typ string) []byte {
	return fmt.Appendf(nil, `{"type":%q,"timestamp":"2026-03-01T10:00:00.000Z","companyId":"0a1b2c3d-0000-4000-8000-00000000000a","mode":"LIVE",`+
		`"data":{"id":%q,"number":"FT 2026/%s","status":"paid","issueDate":"2026-03-01","dueDate":"2026-03-31","currency":"AOA",`+
		`"customer":{"id":"5f0c1e2a-1111-4222-8333-944455566677","name":"Distribuidora Kwanza Lda","nif":"5417000000"},`+
		`"lines":[{"description":"Servicos de consultoria","quantity":"1","unitPrice":"150000.00","taxRate":"14","total":"171000.00"}],`+
		`"subtotal":"150000.00","tax":"21000.00","total":"171000.00","paidAt":"2026-03-02T09:30:00.000Z","agtStatus":"accepted",`+
		`"notes":"Pagamento por transferencia bancaria","createdAt":"2026-03-01T10:00:00.000Z","updatedAt":"2026-03-02T09:30:00.000Z"}}`, typ, id, id)
}

// loadFeed copies n events of company co into a PostgreSQL store's feed,
// spread evenly over [from, to), with marks, and sets the feed's head, as
// if Record had recorded them: the benchmarks' and the plans' data, made
// in seconds rather than by a million Record calls.
func loadFeed(tb testing.TB, h *harness, co string, n int, from, to time.Time) {
	tb.Helper()
	ctx := context.Background()
	if _, err := h.Maintain(ctx); err != nil { // the partitions
		tb.Fatal(err)
	}
	step := max(to.Sub(from).Milliseconds()*1000/int64(n), 1)
	start := from.UnixMilli() * 1000
	rows := func(marks bool) pgx.CopyFromSource {
		i := 0
		return pgx.CopyFromFunc(func() ([]any, error) {
			if i == n {
				return nil, nil
			}
			seq, id, typ := start+int64(i)*step, fmt.Sprintf("evt_%s_%08d", co[34:], i), loadType(i)
			i++
			if marks {
				return []any{co, "LIVE", id, seq / 1000, seq}, nil
			}
			return []any{co, "LIVE", seq, id, typ, "res-" + id, loadBody(id, typ)}, nil
		})
	}
	pool, err := h.db.Pool().Acquire(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	defer pool.Release()
	// A million rows outlast a statement's timeout.
	if _, err := pool.Exec(ctx, "SET statement_timeout = 0"); err != nil {
		tb.Fatal(err)
	}
	defer func() { _, _ = pool.Exec(ctx, "RESET statement_timeout") }()
	if _, err := pool.CopyFrom(ctx, pgx.Identifier{"events"}, []string{"company_id", "mode", "seq", "event_id", "type", "resource_id", "body"}, rows(false)); err != nil {
		tb.Fatal(err)
	}
	if _, err := pool.CopyFrom(ctx, pgx.Identifier{"event_marks"}, []string{"company_id", "mode", "event_id", "marked_ms", "seq"}, rows(true)); err != nil {
		tb.Fatal(err)
	}
	last := start + int64(n-1)*step
	if _, err := pool.Exec(ctx, `INSERT INTO feed_heads (company_id, mode, last_seq, recorded) VALUES ($1, 'LIVE', $2, $3)
ON CONFLICT (company_id, mode) DO UPDATE SET last_seq = greatest(feed_heads.last_seq, excluded.last_seq), recorded = feed_heads.recorded + excluded.recorded`,
		co, last, int64(n)); err != nil {
		tb.Fatal(err)
	}
	if _, err := pool.Exec(ctx, "ANALYZE events; ANALYZE event_marks"); err != nil {
		tb.Fatal(err)
	}
}
