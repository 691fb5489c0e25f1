package audit

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/invoicing-ao/gateway/internal/sqldb"
	"github.com/invoicing-ao/gateway/invoicing"
)

// An import's writes to the log (gateway state import): the entries of an
// older export's audit part, and the import's own state.imported entries.
// Both are planned before anything is written, and written in one
// transaction of the database that the import holds open around its Redis
// writes (Around), so that they are committed if and only if the Redis
// writes are made.

// ImportPlan is what importing a State will write, worked out before.
type ImportPlan struct {
	l                *Log
	added, unchanged int
	writes           map[string][]row // company → the entries it lacks
	byCompany        map[string]int   // entries added
}

// Counts are the entries added and those the log had (none is ever
// changed).
func (p *ImportPlan) Counts() (added, updated, unchanged int) { return p.added, 0, p.unchanged }

// EachCompany calls f with the entries added to each company's log (for
// the import's own audit entries).
func (p *ImportPlan) EachCompany(f func(company string, added, updated int)) {
	for c, n := range p.byCompany {
		f(c, n, 0)
	}
}

// PlanImport checks every entry of s and reads the log's; it writes
// nothing but the partitions the entries need.
func (l *Log) PlanImport(ctx context.Context, s State) (*ImportPlan, error) {
	if s.Version != StateVersion {
		return nil, fmt.Errorf("%w: version %d of the audit log, this gateway reads %d", ErrInvalidState, s.Version, StateVersion)
	}
	seen := map[string]bool{}
	for _, r := range s.Companies {
		if c, ok := invoicing.CanonicalUUID(r.CompanyID); !ok || c != r.CompanyID {
			return nil, fmt.Errorf("%w: company %q is not a company id (a UUID in lower case)", ErrInvalidState, invoicing.Clip(r.CompanyID))
		}
		if seen[r.CompanyID] {
			return nil, fmt.Errorf("%w: company %s is in the file twice", ErrInvalidState, r.CompanyID)
		}
		seen[r.CompanyID] = true
		for _, e := range r.Entries {
			if err := e.check(r.CompanyID); err != nil {
				return nil, err
			}
		}
	}
	if err := l.usable(); err != nil {
		return nil, err
	}
	p := &ImportPlan{l: l, writes: map[string][]row{}, byCompany: map[string]int{}}
	oldest := l.oldest(l.now()) * perMs
	var top int64
	for _, r := range s.Companies {
		var rows []row
		for _, e := range r.Entries {
			if x, _ := e.row(r.CompanyID); x.seq >= oldest { // past the retention: not brought back
				rows = append(rows, x)
				top = max(top, x.seq)
			}
		}
		have, err := l.seqs(ctx, r.CompanyID, rows)
		if err != nil {
			return nil, fail(err)
		}
		var add []row
		for _, x := range rows {
			if have[x.seq] {
				p.unchanged++
			} else {
				add = append(add, x)
			}
		}
		if len(add) > 0 {
			p.added += len(add)
			p.writes[r.CompanyID] = add
			p.byCompany[r.CompanyID] = len(add)
		}
	}
	if p.added > 0 {
		if err := l.ensureUpTo(ctx, top); err != nil {
			return nil, fail(err)
		}
	}
	return p, nil
}

// seqs are which of rows' seqs the company's log has.
func (l *Log) seqs(ctx context.Context, company string, rows []row) (map[int64]bool, error) {
	have := map[int64]bool{}
	if len(rows) == 0 {
		return have, nil
	}
	lo, hi := rows[0].seq, rows[0].seq
	for _, r := range rows {
		lo, hi = min(lo, r.seq), max(hi, r.seq)
	}
	q, err := l.db.Read().Query(ctx, "SELECT seq FROM audit_entries WHERE company_id = $1 AND seq >= $2 AND seq <= $3", company, lo, hi)
	if err != nil {
		return nil, err
	}
	defer q.Close()
	for q.Next() {
		var s int64
		if err := q.Scan(&s); err != nil {
			return nil, err
		}
		have[s] = true
	}
	return have, q.Err()
}

// ensureUpTo makes the partitions an entry of seq top needs, beside those
// from the retention's start to Ahead (PostgreSQL).
func (l *Log) ensureUpTo(ctx context.Context, top int64) error {
	if l.db.Engine() != sqldb.Postgres {
		return nil
	}
	now := l.now()
	to := now.Add(l.ahead)
	if t := time.UnixMilli(top/perMs + 1); t.After(to) {
		to = t
	}
	_, err := l.db.EnsurePartitions(ctx, entriesRanges, now.Add(-l.retention), to)
	return err
}

// Queue writes nothing to Redis: the plan's writes are the database's
// (Around).
func (p *ImportPlan) Queue(context.Context, int, redis.Pipeliner) {}

// Around adds the entries the log lacks, in a transaction that commits
// once write (the import's Redis writes) has succeeded.
func (p *ImportPlan) Around(ctx context.Context, write func(context.Context) error) error {
	return fail(p.l.within(ctx, func(ctx context.Context, q sqldb.Querier) error {
		for _, company := range slices.Sorted(maps.Keys(p.writes)) { // heads locked in one order
			if _, err := insertGiven(ctx, q, company, p.writes[company]); err != nil {
				return err
			}
		}
		return write(ctx)
	}))
}

// EntriesPlan is audit entries written with an import's writes: the
// import's own record, company by company.
type EntriesPlan struct {
	l       *Log
	entries []Entry
}

// PlanEntries checks entries as Record does and plans their writes, made
// with an import's (Around): the log records an import if and only if it
// is written.
func (l *Log) PlanEntries(ctx context.Context, entries []Entry) (*EntriesPlan, error) {
	for _, e := range entries {
		if err := e.check(); err != nil {
			return nil, err
		}
	}
	if err := l.usable(); err != nil {
		return nil, err
	}
	if len(entries) > 0 {
		if _, err := l.ensure(ctx); err != nil {
			return nil, fail(err)
		}
	}
	return &EntriesPlan{l: l, entries: entries}, nil
}

// Counts are the entries the plan adds.
func (p *EntriesPlan) Counts() (added, updated, unchanged int) { return len(p.entries), 0, 0 }

// Queue writes nothing to Redis (Around).
func (p *EntriesPlan) Queue(context.Context, int, redis.Pipeliner) {}

// Around records the entries in a transaction that commits once write has
// succeeded.
func (p *EntriesPlan) Around(ctx context.Context, write func(context.Context) error) error {
	return fail(p.l.within(ctx, func(ctx context.Context, q sqldb.Querier) error {
		for _, e := range p.entries {
			if _, err := p.l.insert(ctx, q, e); err != nil {
				return err
			}
		}
		return write(ctx)
	}))
}

// txKey carries a Log's open transaction in a context, so that the plans
// of one import write in one transaction (SQLite has one writer: a second
// would wait for the first forever).
type txKey struct{ l *Log }

// within runs fn in the transaction ctx carries for l, or else in a new
// one, which fn's ctx then carries.
func (l *Log) within(ctx context.Context, fn func(ctx context.Context, q sqldb.Querier) error) error {
	if q, ok := ctx.Value(txKey{l}).(sqldb.Querier); ok {
		return fn(ctx, q)
	}
	return l.db.Tx(ctx, func(q sqldb.Querier) error {
		return fn(context.WithValue(ctx, txKey{l}, q), q)
	})
}
