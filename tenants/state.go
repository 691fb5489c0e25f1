package tenants

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/invoicing-ao/gateway/internal/redisscan"
	"github.com/invoicing-ao/gateway/invoicing"
)

// Export and import of the companies' limits (state, `gateway state
// export|import`): each company's override hash as Redis keeps it, a reset
// included (its time, no limit). Buckets, leases and instances are not
// exported: they refill by themselves.

// StateVersion is the version of the limits' part of an export.
const StateVersion = 1

// State is the limits' part of an export.
type State struct {
	Version int           `json:"version"`
	Limits  []LimitRecord `json:"limits"`
}

// LimitRecord is one company's overrides: fields live_rate, live_burst,
// test_rate, test_burst when set, and changed (Unix ms of the last change;
// absent in records of before it was kept, which count as the oldest).
type LimitRecord struct {
	CompanyID string            `json:"companyId"`
	Fields    map[string]string `json:"fields"`
}

// ErrInvalidState: the limits of an export cannot be imported.
var ErrInvalidState = errors.New("invalid record")

// ExportState reads every company's overrides.
func (l *Limiter) ExportState(ctx context.Context) (State, error) {
	names, err := redisscan.Keys(ctx, l.rdb, l.prefix+"{*}:limits")
	if err != nil {
		return State{}, fmt.Errorf("tenants: export: %w", err)
	}
	s := State{Version: StateVersion, Limits: []LimitRecord{}}
	for chunk := range slices.Chunk(names, 1000) {
		pipe := l.rdb.Pipeline()
		cmds := make([]*redis.MapStringStringCmd, len(chunk))
		for i, n := range chunk {
			cmds[i] = pipe.HGetAll(ctx, n)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return State{}, fmt.Errorf("tenants: export: %w", err)
		}
		for i, c := range cmds {
			company := strings.TrimSuffix(strings.TrimPrefix(chunk[i], l.prefix+"{"), "}:limits")
			if m := c.Val(); len(m) > 0 {
				delete(m, "reset") // a reset's leftover of before the changed field
				s.Limits = append(s.Limits, LimitRecord{CompanyID: company, Fields: m})
			}
		}
	}
	return s, nil
}

// check refuses what SetLimit could not have written.
func (r LimitRecord) check() error {
	if c, ok := invoicing.CanonicalUUID(r.CompanyID); !ok || c != r.CompanyID {
		return fmt.Errorf("%w: company %q", ErrInvalidState, invoicing.Clip(r.CompanyID))
	}
	if len(r.Fields) == 0 {
		return fmt.Errorf("%w: company %s: no field", ErrInvalidState, r.CompanyID)
	}
	for f, v := range r.Fields {
		known := f == changedField || slices.Contains(rateField[:], f) || slices.Contains(burstField[:], f)
		if !known {
			return fmt.Errorf("%w: company %s: unknown field %q", ErrInvalidState, r.CompanyID, invoicing.Clip(f))
		}
		if _, err := strconv.ParseFloat(v, 64); err != nil {
			return fmt.Errorf("%w: company %s: %s %q", ErrInvalidState, r.CompanyID, f, invoicing.Clip(v))
		}
	}
	for i := range invoicing.Modes {
		rate, rok := r.Fields[rateField[i]]
		burst, bok := r.Fields[burstField[i]]
		if rok != bok {
			return fmt.Errorf("%w: company %s: a rate without a burst, or the other way", ErrInvalidState, r.CompanyID)
		}
		if _, ok := parseOverride(any(rate), any(burst)); rok && !ok {
			return fmt.Errorf("%w: company %s: limit %s/%s out of bounds", ErrInvalidState, r.CompanyID, rate, burst)
		}
	}
	return nil
}

// changedAt is a record's change time; 0 when it has none.
func changedAt(m map[string]string) int64 {
	n, _ := strconv.ParseInt(m[changedField], 10, 64)
	return n
}

// importScript writes a company's overrides (KEYS[1]) when Redis has none,
// or older ones (ARGV[1], the file's change time, greater than Redis's):
// the newer record wins, and Redis's on a tie. ARGV[2...]: the fields.
var importScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 1 and tonumber(redis.call('HGET', KEYS[1], 'changed') or '0') >= tonumber(ARGV[1]) then
  return 0
end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], unpack(ARGV, 2))
return 1`)

// ImportPlan is what importing a State will write, worked out before.
type ImportPlan struct {
	l                         *Limiter
	added, updated, unchanged int
	writes                    []LimitRecord
	new                       map[string]bool // the companies Redis has no limits of
}

// Counts are the companies' limits added, replaced by newer ones, and kept.
func (p *ImportPlan) Counts() (added, updated, unchanged int) { return p.added, p.updated, p.unchanged }

// EachCompany calls f for each company whose limits the import adds (1, 0)
// or replaces (0, 1), for the import's audit entries.
func (p *ImportPlan) EachCompany(f func(company string, added, updated int)) {
	for _, r := range p.writes {
		if p.new[r.CompanyID] {
			f(r.CompanyID, 1, 0)
		} else {
			f(r.CompanyID, 0, 1)
		}
	}
}

// PlanImport checks every record of s and reads Redis's; it writes nothing.
func (l *Limiter) PlanImport(ctx context.Context, s State) (*ImportPlan, error) {
	if s.Version != StateVersion {
		return nil, fmt.Errorf("%w: version %d of the limits, this gateway reads %d", ErrInvalidState, s.Version, StateVersion)
	}
	seen := map[string]bool{}
	for _, r := range s.Limits {
		if err := r.check(); err != nil {
			return nil, err
		}
		if seen[r.CompanyID] {
			return nil, fmt.Errorf("%w: company %s is in the file twice", ErrInvalidState, r.CompanyID)
		}
		seen[r.CompanyID] = true
	}
	if err := importScript.Load(ctx, l.rdb).Err(); err != nil {
		return nil, fmt.Errorf("tenants: import: %w", err)
	}
	p := &ImportPlan{l: l, new: map[string]bool{}}
	for _, r := range s.Limits {
		cur, err := l.rdb.HGetAll(ctx, overrideKey(l.prefix, r.CompanyID)).Result()
		if err != nil {
			return nil, fmt.Errorf("tenants: import: %w", err)
		}
		delete(cur, "reset")
		switch {
		case len(cur) == 0:
			p.added++
			p.new[r.CompanyID] = true
		case changedAt(cur) < changedAt(r.Fields) && !maps.Equal(cur, r.Fields):
			p.updated++
		default:
			p.unchanged++
			continue
		}
		p.writes = append(p.writes, r)
	}
	return p, nil
}

// Queue adds the plan's writes to pipe; the limits have one phase (0).
func (p *ImportPlan) Queue(ctx context.Context, phase int, pipe redis.Pipeliner) {
	if phase != 0 {
		return
	}
	for _, r := range p.writes {
		args := []any{changedAt(r.Fields)}
		for f, v := range r.Fields {
			args = append(args, f, v)
		}
		importScript.EvalSha(ctx, pipe, []string{overrideKey(p.l.prefix, r.CompanyID)}, args...)
	}
}

// Records is how many companies' limits s holds.
func (s State) Records() int { return len(s.Limits) }
