package gendata

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
	_ "time/tzdata" // Africa/Luanda must resolve on hosts without tzdata

	"github.com/jackc/pgx/v5"
)

// Triggers are the changes Trigger can make, by the event type each makes
// the gateway send.
var Triggers = []string{"invoice.issued", "invoice.paid", "invoice.cancelled", "invoice.overdue",
	"invoice.transmission.updated", "client.created", "client.updated"}

// ErrNothingToChange: the company has no row the change needs (and the
// change does not make one).
var ErrNothingToChange = errors.New("gendata: nothing to change")

// Trigger makes, at now, in the database at url, one real change of the
// kind that makes the gateway send an event of type typ for company, as the
// platform would make it: it issues a new invoice, pays or cancels an
// issued one, moves an issued invoice's due date to yesterday (Luanda),
// submits an invoice to AGT, creates a client, or changes one. It returns
// the id of the invoice or client changed. It is meant for a sandbox:
// callers make sure url is not a live database. A zero now is the
// transaction's own start, as the platform's writes record (now()): a time
// taken before the connection was made would be behind the commit by that
// long, which detection reading by commit leaves to its sweep.
func Trigger(ctx context.Context, url, company, typ string, now time.Time) (string, error) {
	db, err := openTrigger(ctx, url)
	if err != nil {
		return "", err
	}
	defer db.close()
	id := ""
	err = db.tx(ctx, func(x execer) error {
		at, err := now, error(nil)
		if at.IsZero() {
			if at, err = x.start(ctx); err != nil {
				return err
			}
		}
		id, err = triggerIn(ctx, x, company, typ, at.UTC())
		return err
	})
	return id, err
}

func triggerIn(ctx context.Context, x execer, company, typ string, now time.Time) (string, error) {
	yesterday := now.In(luanda).AddDate(0, 0, -1).Format("2006-01-02")
	issued := func(extra string, args ...any) (string, error) {
		return x.one(ctx, `SELECT id FROM documents WHERE company_id = ? AND state = 'issued' AND doc_type IN ('FT', 'ND')`+extra+
			` ORDER BY issued_at DESC, id LIMIT 1`, append([]any{company}, args...)...)
	}
	switch typ {
	case "invoice.issued":
		return newInvoice(ctx, x, company, now)
	case "invoice.paid", "invoice.cancelled":
		id, err := issued("")
		if errors.Is(err, ErrNothingToChange) {
			id, err = newInvoice(ctx, x, company, now)
		}
		if err != nil {
			return "", err
		}
		state := strings.TrimPrefix(typ, "invoice.")
		return id, x.exec(ctx, `UPDATE documents SET state = ?, updated_at = ? WHERE id = ?`, state, tsV(now), id)
	case "invoice.overdue":
		id, err := issued(` AND (due_date IS NULL OR due_date >= ?)`, now.In(luanda).Format("2006-01-02"))
		if errors.Is(err, ErrNothingToChange) {
			id, err = newInvoice(ctx, x, company, now)
		}
		if err != nil {
			return "", err
		}
		return id, x.exec(ctx, `UPDATE documents SET due_date = ?, updated_at = ? WHERE id = ?`, yesterday, tsV(now), id)
	case "invoice.transmission.updated":
		id, err := issued("")
		if errors.Is(err, ErrNothingToChange) {
			id, err = newInvoice(ctx, x, company, now)
		}
		if err != nil {
			return "", err
		}
		sub := newID()
		if err := x.exec(ctx, `INSERT INTO agt_submissions (id, company_id, submitted_at) VALUES (?, ?, ?)`, uuidV(sub), uuidV(company), tsV(now)); err != nil {
			return "", err
		}
		return id, x.exec(ctx, `INSERT INTO agt_submission_documents (submission_id, document_id) VALUES (?, ?)`, uuidV(sub), uuidV(id))
	case "client.created":
		id := newID()
		return id, x.exec(ctx, `INSERT INTO customers (id, company_id, name, kind, created_at, updated_at) VALUES (?, ?, ?, 'C', ?, ?)`,
			uuidV(id), uuidV(company), "Cliente de teste "+id[:8], tsV(now), tsV(now))
	case "client.updated":
		id, err := x.one(ctx, `SELECT id FROM customers WHERE company_id = ? AND deleted_at IS NULL ORDER BY created_at DESC, id LIMIT 1`, company)
		if err != nil {
			return "", err
		}
		return id, x.exec(ctx, `UPDATE customers SET email = ?, updated_at = ? WHERE id = ?`, "teste+"+now.Format("150405")+"@example.ao", tsV(now), id)
	}
	return "", fmt.Errorf("gendata: unknown trigger %q (known: %s)", typ, strings.Join(Triggers, ", "))
}

// newInvoice issues a new FT of 1,140.00 AOA, due in 30 days, to the
// company's newest client (or an anonymous final consumer).
func newInvoice(ctx context.Context, x execer, company string, now time.Time) (string, error) {
	seqS, err := x.one(ctx, `SELECT CAST(COALESCE(MAX(seq), 0) + 1 AS TEXT) FROM documents WHERE company_id = ? AND doc_type = 'FT' AND series = ?`,
		company, now.Format("2006"))
	if err != nil {
		return "", err
	}
	var seq int
	if _, err := fmt.Sscan(seqS, &seq); err != nil {
		return "", fmt.Errorf("gendata: next number %q: %w", seqS, err)
	}
	id := newID()
	due := now.In(luanda).AddDate(0, 0, 30).Format("2006-01-02")
	if err := x.exec(ctx, `INSERT INTO documents (id, company_id, doc_type, series, seq, state, customer_name, customer_nif,
  net_total, tax_total, gross_total, issued_at, due_date, created_at, updated_at)
VALUES (?, ?, 'FT', ?, ?, 'issued', 'Consumidor final', '999999999', ?, ?, ?, ?, ?, ?, ?)`,
		uuidV(id), uuidV(company), now.Format("2006"), seq, decV("1000.00"), decV("140.00"), decV("1140.00"), tsV(now), dateNull(&due), tsV(now), tsV(now)); err != nil {
		return "", err
	}
	return id, x.exec(ctx, `INSERT INTO document_lines (document_id, line_no, description, quantity, unit_price, tax_rate, line_total)
VALUES (?, 1, 'Serviço de teste', ?, ?, ?, ?)`, uuidV(id), decV("1.000"), decV("1000.0000"), decV("14.00"), decV("1000.00"))
}

// luanda is the platform's business day's zone (due dates are its days).
var luanda = func() *time.Location {
	if loc, err := time.LoadLocation("Africa/Luanda"); err == nil {
		return loc
	}
	return time.FixedZone("WAT", 3600)
}()

func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// execer runs the trigger's statements (written with ? placeholders) on
// either engine.
type execer interface {
	exec(ctx context.Context, q string, args ...any) error
	// one is the first column of the first row, as text; ErrNothingToChange
	// when there is none.
	one(ctx context.Context, q string, args ...any) (string, error)
	// start is the transaction's start: PostgreSQL's now(); SQLite's
	// clock, this process's, as the gateway reads it.
	start(ctx context.Context) (time.Time, error)
}

type triggerDB struct {
	pg *pgx.Conn
	lt *sql.DB
}

func openTrigger(ctx context.Context, url string) (*triggerDB, error) {
	switch {
	case strings.HasPrefix(url, "postgres://"), strings.HasPrefix(url, "postgresql://"):
		c, err := pgx.Connect(ctx, url)
		if err != nil {
			return nil, fmt.Errorf("gendata: connect: %w", err)
		}
		return &triggerDB{pg: c}, nil
	case strings.HasPrefix(url, "sqlite:"):
		db, err := sql.Open("sqlite", strings.TrimPrefix(url, "sqlite:")+"?_pragma=foreign_keys(1)&_pragma=busy_timeout(5000)")
		if err != nil {
			return nil, fmt.Errorf("gendata: open: %w", err)
		}
		return &triggerDB{lt: db}, nil
	}
	return nil, errors.New("gendata: database URL must be a postgres:// or sqlite: URL")
}

func (d *triggerDB) close() {
	if d.pg != nil {
		_ = d.pg.Close(context.Background())
	} else {
		_ = d.lt.Close()
	}
}

func (d *triggerDB) tx(ctx context.Context, f func(execer) error) error {
	if d.pg != nil {
		return pgx.BeginFunc(ctx, d.pg, func(tx pgx.Tx) error { return f(pgExec{tx}) })
	}
	tx, err := d.lt.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := f(liteExec{tx}); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

type pgExec struct{ tx pgx.Tx }

func (p pgExec) args(args []any) ([]any, error) {
	out := make([]any, len(args))
	for i, a := range args {
		v, err := pgValue(a)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

func (p pgExec) exec(ctx context.Context, q string, args ...any) error {
	a, err := p.args(args)
	if err == nil {
		_, err = p.tx.Exec(ctx, dollars(q), a...)
	}
	return err
}

func (p pgExec) start(ctx context.Context) (time.Time, error) {
	var t time.Time
	err := p.tx.QueryRow(ctx, "SELECT now()").Scan(&t)
	return t, err
}

func (p pgExec) one(ctx context.Context, q string, args ...any) (string, error) {
	a, err := p.args(args)
	if err != nil {
		return "", err
	}
	var v string
	err = p.tx.QueryRow(ctx, "SELECT CAST(v AS TEXT) FROM ("+dollars(q)+") AS t(v)", a...).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", ErrNothingToChange
	}
	return v, err
}

// dollars numbers ? placeholders for PostgreSQL.
func dollars(q string) string {
	var b strings.Builder
	n := 0
	for _, r := range q {
		if r == '?' {
			n++
			fmt.Fprintf(&b, "$%d", n)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

type liteExec struct{ tx *sql.Tx }

func (l liteExec) exec(ctx context.Context, q string, args ...any) error {
	_, err := l.tx.ExecContext(ctx, q, liteArgs(args)...)
	return err
}

func (l liteExec) start(context.Context) (time.Time, error) { return time.Now(), nil }

func (l liteExec) one(ctx context.Context, q string, args ...any) (string, error) {
	var v string
	err := l.tx.QueryRowContext(ctx, q, liteArgs(args)...).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", ErrNothingToChange
	}
	return v, err
}

func liteArgs(args []any) []any {
	out := make([]any, len(args))
	for i, a := range args {
		out[i] = sqliteValue(a)
	}
	return out
}
