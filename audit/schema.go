package audit

import (
	"context"
	"time"

	"github.com/invoicing-ao/gateway/internal/sqldb"
)

// Migrations is the audit log's schema, for sqldb's Check and Apply: its
// track is "audit".
//
// audit_heads holds each company's last seq (the row its writers lock)
// and how many entries it has (for MaxPerCompany). audit_entries holds
// the entries by (company_id, seq); the time the change happened (at_ms)
// is the recorder's, the seq the recording's.
func Migrations() sqldb.Track {
	return sqldb.Track{Name: "audit", Migrations: []sqldb.Migration{
		{Version: 1, Name: "audit heads and entries", Postgres: pgSchema1, SQLite: liteSchema1},
	}}
}

const pgSchema1 = `
CREATE TABLE audit_heads (
  company_id uuid NOT NULL PRIMARY KEY,
  last_seq bigint NOT NULL DEFAULT 0, entries bigint NOT NULL DEFAULT 0);
CREATE TABLE audit_entries (
  company_id uuid NOT NULL, seq bigint NOT NULL, at_ms bigint NOT NULL,
  actor text NOT NULL, action text NOT NULL,
  key_id text NOT NULL DEFAULT '', webhook_id text NOT NULL DEFAULT '',
  before_json text NOT NULL DEFAULT '', after_json text NOT NULL DEFAULT '',
  PRIMARY KEY (company_id, seq)) PARTITION BY RANGE (seq);
`

// liteSchema1 is pgSchema1 without partitions, with an index on seq for
// the retention's deletes.
const liteSchema1 = `
CREATE TABLE audit_heads (
  company_id text NOT NULL PRIMARY KEY,
  last_seq bigint NOT NULL DEFAULT 0, entries bigint NOT NULL DEFAULT 0);
CREATE TABLE audit_entries (
  company_id text NOT NULL, seq bigint NOT NULL, at_ms bigint NOT NULL,
  actor text NOT NULL, action text NOT NULL,
  key_id text NOT NULL DEFAULT '', webhook_id text NOT NULL DEFAULT '',
  before_json text NOT NULL DEFAULT '', after_json text NOT NULL DEFAULT '',
  PRIMARY KEY (company_id, seq));
CREATE INDEX audit_entries_seq ON audit_entries (seq);
`

// entriesRanges are the entries' partitions (PostgreSQL): by seq, which
// counts milliseconds × 1000, in spans of 30 days (about a month; sqldb
// cuts fixed spans from the Unix epoch), so that 400 days are 14 of them.
var entriesRanges = sqldb.Ranges{Table: "audit_entries", PerMs: perMs, Span: 30 * 24 * time.Hour}

// maintainLock is the advisory lock one maintaining instance holds.
const maintainLock = 0x67775f617564 // "gw_aud"

// Maintenance is what a Maintain did: partitions made and dropped
// (PostgreSQL), rows deleted (SQLite); Busy when another instance was at
// it.
type Maintenance struct {
	Made, Dropped []string
	Deleted       int64
	Busy          bool
}

// ensure makes the partitions from the retention's start to Ahead from
// now (those behind take what an upgrade or an older export brings).
func (l *Log) ensure(ctx context.Context) ([]string, error) {
	if l.db.Engine() != sqldb.Postgres {
		return nil, nil
	}
	now := l.now()
	return l.db.EnsurePartitions(ctx, entriesRanges, now.Add(-l.retention), now.Add(l.ahead))
}

// Maintain makes the partitions ahead and drops those wholly past the
// retention (PostgreSQL), or deletes what is past it in bounded batches
// (SQLite). Several instances may call it; one works at a time. Reads
// never show an entry past the retention, whether or not it is gone yet.
func (l *Log) Maintain(ctx context.Context) (Maintenance, error) {
	if err := l.usable(); err != nil {
		return Maintenance{}, err
	}
	if l.db.Engine() == sqldb.SQLite {
		n, err := l.db.DeleteBefore(ctx, "audit_entries", "seq", l.oldest(l.now())*perMs, l.deletes)
		return Maintenance{Deleted: n}, fail(err)
	}
	conn, err := l.db.Pool().Acquire(ctx)
	if err != nil {
		return Maintenance{}, fail(err)
	}
	defer conn.Release()
	var mine bool
	if err := conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", int64(maintainLock)).Scan(&mine); err != nil {
		return Maintenance{}, fail(err)
	}
	if !mine {
		return Maintenance{Busy: true}, nil
	}
	defer func() {
		_, _ = conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", int64(maintainLock))
	}()
	var m Maintenance
	if m.Made, err = l.ensure(ctx); err != nil {
		return m, fail(err)
	}
	old, err := l.db.ExpiredPartitions(ctx, entriesRanges, l.now().Add(-l.retention))
	if err != nil {
		return m, fail(err)
	}
	for _, p := range old {
		if err := l.db.DropPartition(ctx, entriesRanges, p); err != nil {
			return m, fail(err)
		}
		m.Dropped = append(m.Dropped, p.Name)
	}
	return m, nil
}
