package sqldb

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
)

// Time partitions (PostgreSQL): a table PARTITION BY RANGE on a bigint
// column that counts time (milliseconds, or a position of milliseconds ×
// 1000), cut into spans of a fixed length from the Unix epoch, UTC, so
// that retention drops whole partitions instead of deleting rows (no dead
// tuples, no vacuum behind it). Each partition is named after the start of
// its span: events_20260312 for a day, events_20260312_0600 for a span
// that does not start a day.
//
// Neither making nor dropping one holds a lock that stops the table's
// readers or writers: a partition is made apart (LIKE the table) and then
// attached (ATTACH PARTITION takes SHARE UPDATE EXCLUSIVE on the table),
// and dropped after DETACH PARTITION … CONCURRENTLY (PostgreSQL 14 and
// later; before, a plain DETACH under a short lock_timeout). Each waits at
// most LockTimeout for its locks, and fails rather than queueing the
// table's queries behind it: the next maintenance tries again.

// Ranges describes a time-partitioned table.
type Ranges struct {
	Table string // the partitioned table; a plain identifier
	// PerMs is how many units of the partition column make a millisecond:
	// 1 for a column of milliseconds, 1000 for positions ms × 1000 + k.
	// Zero: 1.
	PerMs int64
	// Span is each partition's length. Zero: a day.
	Span time.Duration
	// With is the storage parameters of each partition
	// ("toast_tuple_target=256"); "": the defaults.
	With string
	// LockTimeout bounds each wait for a lock. Zero: 2 s.
	LockTimeout time.Duration
}

func (r Ranges) perMs() int64 { return max(r.PerMs, 1) }

func (r Ranges) span() time.Duration {
	if r.Span <= 0 {
		return 24 * time.Hour
	}
	return r.Span
}

func (r Ranges) lockTimeout() string {
	d := r.LockTimeout
	if d <= 0 {
		d = 2 * time.Second
	}
	return strconv.FormatInt(d.Milliseconds(), 10)
}

// Partition is one partition of a table: its name and range [From, To), in
// the column's units; Attached is false for a table of the partitions'
// names that a drop detached and did not remove (it is removed next).
type Partition struct {
	Name     string
	From, To int64
	Attached bool
}

var (
	ident  = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)
	bounds = regexp.MustCompile(`FROM \('?(-?\d+)'?\) TO \('?(-?\d+)'?\)`)
)

func (db *DB) checkRanges(r Ranges) error {
	if db.engine != Postgres {
		return errors.New("sqldb: partitions are PostgreSQL's; SQLite deletes in batches (DeleteBefore)")
	}
	if !ident.MatchString(r.Table) {
		return fmt.Errorf("sqldb: %q is not a plain table name", r.Table)
	}
	return nil
}

// pgxQuery is a pool or a transaction, for reading the catalog.
type pgxQuery interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// Partitions lists r's partitions, attached or left detached, by range.
func (db *DB) Partitions(ctx context.Context, r Ranges) ([]Partition, error) {
	if err := db.checkRanges(r); err != nil {
		return nil, err
	}
	return partitionsOf(ctx, db.pg, r)
}

func partitionsOf(ctx context.Context, q pgxQuery, r Ranges) ([]Partition, error) {
	rows, err := q.Query(ctx, `SELECT c.relname, pg_get_expr(c.relpartbound, c.oid), i.inhrelid IS NOT NULL
FROM pg_class c
LEFT JOIN pg_inherits i ON i.inhrelid = c.oid AND i.inhparent = $1::text::regclass
WHERE c.relnamespace = (SELECT relnamespace FROM pg_class WHERE oid = $1::text::regclass) AND c.relkind = 'r'
  AND (i.inhrelid IS NOT NULL OR c.relname ~ ('^' || $2 || '_[0-9]{8}(_[0-9]{4})?$'))`, r.Table, r.Table)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Partition
	for rows.Next() {
		var p Partition
		var bound *string
		if err := rows.Scan(&p.Name, &bound, &p.Attached); err != nil {
			return nil, err
		}
		if p.Attached {
			m := bounds.FindStringSubmatch(deref(bound))
			if m == nil {
				continue // DEFAULT: never made here, never dropped
			}
			p.From, _ = strconv.ParseInt(m[1], 10, 64)
			p.To, _ = strconv.ParseInt(m[2], 10, 64)
		}
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].From < out[j].From })
	return out, rows.Err()
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// EnsurePartitions makes the partitions missing for [from, to): whole
// spans, cut short where a partition (of another span) exists already.
// They are made in one transaction, one instance at a time per table (an
// advisory lock: the second finds them made, rather than waiting on the
// first's locks past LockTimeout). It reports the partitions it made.
func (db *DB) EnsurePartitions(ctx context.Context, r Ranges, from, to time.Time) ([]string, error) {
	have, err := db.Partitions(ctx, r)
	if err != nil {
		return nil, err
	}
	if len(gaps(r, have, from, to)) == 0 {
		return nil, nil // the common case, without a lock
	}
	made, err := db.makePartitions(ctx, r, from, to)
	if err != nil {
		return nil, fmt.Errorf("sqldb: partitions of %s: %w", r.Table, err)
	}
	return made, nil
}

// gaps are the partitions to make so that [from, to) is covered: spans
// from the epoch, cut to the partitions that exist.
func gaps(r Ranges, have []Partition, from, to time.Time) []Partition {
	span := r.span().Milliseconds() * r.perMs()
	lo := floorDiv(from.UnixMilli()*r.perMs(), span) * span
	hi := to.UnixMilli() * r.perMs()
	var out []Partition
	for start := lo; start < hi; start += span {
		a, b := start, start+span
		for _, p := range have {
			if !p.Attached || p.To <= a || p.From >= b {
				continue
			}
			// An existing partition overlaps [a, b): keep what is before
			// it (a later one cuts the rest, if any, on the next turn).
			if p.From > a {
				out = append(out, part(r, a, p.From))
			}
			a = max(a, p.To)
		}
		if a < b {
			out = append(out, part(r, a, b))
		}
	}
	return out
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

// part names the partition [from, to) after its start.
func part(r Ranges, from, to int64) Partition {
	t := time.UnixMilli(from / r.perMs()).UTC()
	name := r.Table + "_" + t.Format("20060102")
	if t.Hour() != 0 || t.Minute() != 0 {
		name += "_" + t.Format("1504")
	}
	return Partition{Name: name, From: from, To: to, Attached: true}
}

func (db *DB) makePartitions(ctx context.Context, r Ranges, from, to time.Time) ([]string, error) {
	with := ""
	if r.With != "" {
		with = " WITH (" + r.With + ")"
	}
	tx, err := db.pg.Begin(ctx)
	if err != nil {
		return nil, err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1, hashtext($2))", int32(partitionsLock), r.Table); err != nil {
		return nil, err
	}
	have, err := partitionsOf(ctx, tx, r)
	if err != nil {
		return nil, err
	}
	todo := gaps(r, have, from, to)
	if _, err := tx.Exec(ctx, "SET LOCAL lock_timeout = "+r.lockTimeout()); err != nil {
		return nil, err
	}
	table := pgx.Identifier{r.Table}.Sanitize()
	for _, p := range todo {
		name := pgx.Identifier{p.Name}.Sanitize()
		stmts := []string{
			"CREATE TABLE " + name + " (LIKE " + table + " INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE INCLUDING COMPRESSION)" + with,
			// Attaching makes the table's indexes on the new, empty partition.
			fmt.Sprintf("ALTER TABLE %s ATTACH PARTITION %s FOR VALUES FROM (%d) TO (%d)", table, name, p.From, p.To),
		}
		for _, s := range stmts {
			if _, err := tx.Exec(ctx, s); err != nil {
				return nil, fmt.Errorf("%s: %w", p.Name, err)
			}
		}
	}
	return names(todo), tx.Commit(ctx)
}

// partitionsLock is the first key of the advisory lock that makes one
// table's partitions (the second is the table's name, hashed).
const partitionsLock = 0x67775f70 // "gw_p"

func names(ps []Partition) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Name)
	}
	return out
}

// ExpiredPartitions are r's partitions wholly before before (their range
// ends at or before it), oldest first, and those left detached.
func (db *DB) ExpiredPartitions(ctx context.Context, r Ranges, before time.Time) ([]Partition, error) {
	have, err := db.Partitions(ctx, r)
	if err != nil {
		return nil, err
	}
	cut := before.UnixMilli() * r.perMs()
	var out []Partition
	for _, p := range have {
		if !p.Attached || p.To <= cut {
			out = append(out, p)
		}
	}
	return out, nil
}

// DropPartition detaches p from r's table and drops it. A detach that was
// interrupted is finished first.
func (db *DB) DropPartition(ctx context.Context, r Ranges, p Partition) error {
	if err := db.checkRanges(r); err != nil {
		return err
	}
	name, table := pgx.Identifier{p.Name}.Sanitize(), pgx.Identifier{r.Table}.Sanitize()
	ver, err := db.version(ctx) // before a connection is held: it may take one
	if err != nil {
		return err
	}
	conn, err := db.pg.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	// A session setting, reset before the connection goes back.
	if _, err := conn.Exec(ctx, "SET lock_timeout = "+r.lockTimeout()); err != nil {
		return err
	}
	defer func() { _, _ = conn.Exec(context.WithoutCancel(ctx), "RESET lock_timeout") }()
	if p.Attached {
		var pending bool
		if ver >= 140000 {
			if err := conn.QueryRow(ctx, "SELECT inhdetachpending FROM pg_inherits WHERE inhrelid = $1::text::regclass", p.Name).Scan(&pending); err != nil {
				return err
			}
		}
		detach := "ALTER TABLE " + table + " DETACH PARTITION " + name
		switch {
		case pending:
			detach += " FINALIZE"
		case ver >= 140000:
			detach += " CONCURRENTLY" // outside a transaction: Exec without arguments
		}
		if _, err := conn.Exec(ctx, detach); err != nil {
			return fmt.Errorf("sqldb: detach %s: %w", p.Name, err)
		}
	}
	if _, err := conn.Exec(ctx, "DROP TABLE IF EXISTS "+name); err != nil {
		return fmt.Errorf("sqldb: drop %s: %w", p.Name, err)
	}
	return nil
}

// Batches bounds a DeleteBefore.
type Batches struct {
	Size int // rows a transaction deletes; zero: 1000
	Max  int // transactions a call makes at most; zero: 100
}

// DeleteBefore deletes, in transactions of b.Size rows, the rows of table
// whose column is below before (in the column's units), at most b.Max
// transactions a call, so that the writer is never held long: SQLite's
// retention. An index on column keeps each batch's read short. It reports
// the rows deleted; fewer than b.Size × b.Max means none is left.
func (db *DB) DeleteBefore(ctx context.Context, table, column string, before int64, b Batches) (int64, error) {
	if !ident.MatchString(table) || !ident.MatchString(column) {
		return 0, fmt.Errorf("sqldb: %q.%q is not a plain table and column", table, column)
	}
	size, most := b.Size, b.Max
	if size <= 0 {
		size = 1000
	}
	if most <= 0 {
		most = 100
	}
	if db.engine != SQLite {
		return 0, errors.New("sqldb: DeleteBefore is SQLite's retention; PostgreSQL drops partitions")
	}
	stmt := "DELETE FROM " + table + " WHERE rowid IN (SELECT rowid FROM " + table + " WHERE " + column + " < $1 LIMIT $2)"
	var total int64
	for range most {
		var n int64
		err := db.Tx(ctx, func(q Querier) error {
			var err error
			n, err = q.Exec(ctx, stmt, before, size)
			return err
		})
		total += n
		if err != nil {
			return total, err
		}
		if n < int64(size) {
			break
		}
	}
	return total, nil
}
