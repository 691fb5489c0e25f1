package audit

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/invoicing-ao/gateway/invoicing"
)

// mergeScript adds to a company's stream (KEYS[1]) the entries it lacks,
// each in its place by id: a stream only grows at its end, so the stream is
// written again, whole and in order, into KEYS[2] (same slot), which then
// replaces it. Then it is trimmed as Record trims it: ARGV[1] the oldest
// millisecond kept, ARGV[2] the most entries, ARGV[3] how long the stream
// is kept (ms). ARGV[4...]: per entry its id, its count of field and value
// strings, and them. It returns how many entries it added.
var mergeScript = redis.NewScript(`
local function parse(id)
  local ms, seq = string.match(id, '^(%d+)-(%d+)$')
  return tonumber(ms), tonumber(seq)
end
local function less(a, b)
  local am, as = parse(a[1]); local bm, bs = parse(b[1])
  if am ~= bm then return am < bm end
  return as < bs
end
local all, have = {}, {}
for _, e in ipairs(redis.call('XRANGE', KEYS[1], '-', '+')) do
  table.insert(all, e); have[e[1]] = true
end
local added, i = 0, 4
while i <= #ARGV do
  local id, n = ARGV[i], tonumber(ARGV[i + 1])
  if not have[id] and parse(id) >= tonumber(ARGV[1]) then
    local f = {}
    for j = 1, n do f[j] = ARGV[i + 1 + j] end
    table.insert(all, {id, f}); have[id] = true; added = added + 1
  end
  i = i + 2 + n
end
if added == 0 then return 0 end
table.sort(all, less)
redis.call('DEL', KEYS[2])
for _, e in ipairs(all) do redis.call('XADD', KEYS[2], e[1], unpack(e[2])) end
redis.call('RENAME', KEYS[2], KEYS[1])
redis.call('XTRIM', KEYS[1], 'MINID', ARGV[1])
redis.call('XTRIM', KEYS[1], 'MAXLEN', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return added`)

// ImportPlan is what importing a State will write, worked out before.
type ImportPlan struct {
	l                         *Log
	added, updated, unchanged int
	writes                    []StreamRecord
	byCompany                 map[string]int // entries added
}

// Counts are the entries added and those Redis had (none is ever changed).
func (p *ImportPlan) Counts() (added, updated, unchanged int) { return p.added, p.updated, p.unchanged }

// EachCompany calls f with the entries added to each company's log (for
// the import's own audit entries).
func (p *ImportPlan) EachCompany(f func(company string, added, updated int)) {
	for c, n := range p.byCompany {
		f(c, n, 0)
	}
}

// PlanImport checks every entry of s and reads Redis's; it writes nothing.
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
	if err := mergeScript.Load(ctx, l.rdb).Err(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	p := &ImportPlan{l: l, byCompany: map[string]int{}}
	oldest := l.oldest(l.now())
	for _, r := range s.Companies {
		msgs, err := l.rdb.XRange(ctx, l.stream(r.CompanyID), "-", "+").Result()
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		have := make(map[string]bool, len(msgs))
		for _, m := range msgs {
			have[m.ID] = true
		}
		n := 0
		for _, e := range r.Entries {
			switch {
			case have[e.ID]:
				p.unchanged++
			case idMS(e.ID) < oldest: // past the retention: not brought back
			default:
				n++
			}
		}
		if n > 0 {
			p.added += n
			p.writes = append(p.writes, r)
			p.byCompany[r.CompanyID] = n
		}
	}
	return p, nil
}

// Queue adds the plan's writes to pipe; the audit log has one phase (0).
func (p *ImportPlan) Queue(ctx context.Context, phase int, pipe redis.Pipeliner) {
	if phase != 0 {
		return
	}
	l := p.l
	for _, r := range p.writes {
		args := []any{l.oldest(l.now()), l.max, l.retention.Milliseconds()}
		for _, e := range r.Entries {
			args = append(args, e.ID, 2*len(e.Fields))
			for f, v := range e.Fields {
				args = append(args, f, v)
			}
		}
		stream := l.stream(r.CompanyID)
		mergeScript.EvalSha(ctx, pipe, []string{stream, stream + ":merge"}, args...)
	}
}

// EntriesPlan is audit entries written with an import's writes: the
// import's own record, company by company.
type EntriesPlan struct {
	l       *Log
	entries []Entry
}

// PlanEntries checks entries as Record does and plans their writes, made
// with an import's, last (phase 2): the log records an import if and only
// if it is written.
func (l *Log) PlanEntries(ctx context.Context, entries []Entry) (*EntriesPlan, error) {
	for _, e := range entries {
		if err := e.check(); err != nil {
			return nil, err
		}
	}
	if err := appendScript.Load(ctx, l.rdb).Err(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return &EntriesPlan{l: l, entries: entries}, nil
}

// Counts are the entries the plan adds.
func (p *EntriesPlan) Counts() (added, updated, unchanged int) { return len(p.entries), 0, 0 }

// Queue adds the entries to pipe in the last phase (2).
func (p *EntriesPlan) Queue(ctx context.Context, phase int, pipe redis.Pipeliner) {
	if phase != 2 {
		return
	}
	for _, e := range p.entries {
		_, args := p.l.appendArgs(e)
		appendScript.EvalSha(ctx, pipe, []string{p.l.stream(e.CompanyID)}, args...)
	}
}
