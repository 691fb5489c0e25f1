package authz

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// Importing keys. A key's life only moves forward (created, maybe rolled,
// maybe revoked; its expiry only ever comes sooner), so the rule of a
// merge is a join of the two records, whichever came first: a revocation
// always wins (and the earliest revocation time), the sooner expiry wins,
// a roll's successor is kept, the later last use is kept; what never
// changes after creation (company, mode, scopes, name, networks) is the
// record in Redis's. Merging a record twice, or in either order, gives the
// same record: importing twice changes nothing the second time.

// mergeKey is the merge of the file's record into Redis's (nil: none): the
// merged record, and whether it differs from Redis's.
func mergeKey(cur, in map[string]string) (map[string]string, bool) {
	if len(cur) == 0 {
		return maps.Clone(in), true
	}
	out := maps.Clone(cur)
	less := func(a, b string) bool {
		x, _ := strconv.ParseInt(a, 10, 64)
		y, _ := strconv.ParseInt(b, 10, 64)
		return x < y
	}
	if in["state"] == StateRevoked {
		if out["state"] != StateRevoked || (in["revoked_at"] != "" && (out["revoked_at"] == "" || less(in["revoked_at"], out["revoked_at"]))) {
			out["state"], out["revoked_at"] = StateRevoked, in["revoked_at"]
		}
	}
	if in["expires"] != "" && (out["expires"] == "" || less(in["expires"], out["expires"])) {
		out["expires"] = in["expires"]
	}
	if in["replaced_by"] != "" && out["replaced_by"] == "" {
		out["replaced_by"] = in["replaced_by"]
	}
	if in["last_used"] != "" && (out["last_used"] == "" || less(out["last_used"], in["last_used"])) {
		out["last_used"] = in["last_used"]
	}
	return out, !maps.Equal(out, cur)
}

// mergeScript is mergeKey in Redis, on the record KEYS[1], with the file's
// record as ARGV's field, value pairs: the plan's reading may be stale by
// the time it runs (a revocation meanwhile), and a join is never undone by
// one. It returns 1 when it wrote.
var mergeScript = redis.NewScript(`
local cur = redis.call('HGETALL', KEYS[1])
if #cur == 0 then redis.call('HSET', KEYS[1], unpack(ARGV)); return 1 end
local c, f = {}, {}
for i = 1, #cur, 2 do c[cur[i]] = cur[i + 1] end
for i = 1, #ARGV, 2 do f[ARGV[i]] = ARGV[i + 1] end
local function less(a, b) return tonumber(a) < tonumber(b) end
local set = {}
if f.state == 'revoked' and (c.state ~= 'revoked' or (f.revoked_at and (not c.revoked_at or less(f.revoked_at, c.revoked_at)))) then
  table.insert(set, 'state'); table.insert(set, 'revoked')
  if f.revoked_at then table.insert(set, 'revoked_at'); table.insert(set, f.revoked_at) end
end
if f.expires and (not c.expires or c.expires == '' or less(f.expires, c.expires)) then
  table.insert(set, 'expires'); table.insert(set, f.expires)
end
if f.replaced_by and (not c.replaced_by or c.replaced_by == '') then
  table.insert(set, 'replaced_by'); table.insert(set, f.replaced_by)
end
if f.last_used and (not c.last_used or less(c.last_used, f.last_used)) then
  table.insert(set, 'last_used'); table.insert(set, f.last_used)
end
if #set == 0 then return 0 end
redis.call('HSET', KEYS[1], unpack(set))
return 1`)

// recountScript puts a key id where its merged record counts (ARGV[3]: 0
// counted, 1 rolled, -1 neither), scored by its expiry (ARGV[4]), and in the
// company's listing (created ARGV[5]). A merge may leave a company above
// MaxActiveKeys: every key is kept, and creating more is refused until
// some are revoked.
var recountScript = redis.NewScript(prelude + `
redis.call('ZADD', KEYS[3], ARGV[5], ARGV[2])
if ARGV[3] == '0' then
  redis.call('ZREM', KEYS[2], ARGV[2]); redis.call('ZADD', KEYS[1], ARGV[4], ARGV[2])
elseif ARGV[3] == '1' then
  redis.call('ZREM', KEYS[1], ARGV[2]); redis.call('ZADD', KEYS[2], ARGV[4], ARGV[2])
else
  redis.call('ZREM', KEYS[1], ARGV[2]); redis.call('ZREM', KEYS[2], ARGV[2])
end
return 1`)

// ImportPlan is what importing a State will write, worked out before any
// write. Counts() says what it does.
type ImportPlan struct {
	k                         *Keyring
	added, updated, unchanged int
	writes                    []keyWrite
}

type keyWrite struct {
	in     KeyRecord
	merged map[string]string
	added  bool // Redis has no record of the key
}

// Counts are the keys added, updated (merged into Redis's) and unchanged.
func (p *ImportPlan) Counts() (added, updated, unchanged int) { return p.added, p.updated, p.unchanged }

// EachCompany calls f with the keys added and updated in each company (for
// the import's audit entries).
func (p *ImportPlan) EachCompany(f func(company string, added, updated int)) {
	n := map[string]*[2]int{}
	for _, w := range p.writes {
		c := w.in.Fields["company"]
		if n[c] == nil {
			n[c] = new([2]int)
		}
		if w.added {
			n[c][0]++
		} else {
			n[c][1]++
		}
	}
	for c, v := range n {
		f(c, v[0], v[1])
	}
}

// PlanImport checks every record of s and reads Redis's: it writes nothing.
// A record that is not one, a foreign version, or a key id that Redis holds
// for another secret refuses the whole import.
func (k *Keyring) PlanImport(ctx context.Context, s State) (*ImportPlan, error) {
	if s.Version != StateVersion {
		return nil, fmt.Errorf("%w: version %d of the keys, this gateway reads %d", ErrInvalidState, s.Version, StateVersion)
	}
	seen := map[string]bool{}
	for _, r := range s.Keys {
		if err := r.check(); err != nil {
			return nil, err
		}
		if seen[r.Fields["id"]] || seen[r.SHA256] {
			return nil, fmt.Errorf("%w: key %s is in the file twice", ErrInvalidState, r.Fields["id"])
		}
		seen[r.Fields["id"]], seen[r.SHA256] = true, true
	}
	for _, sc := range []*redis.Script{mergeScript, recountScript} {
		if err := sc.Load(ctx, k.rdb).Err(); err != nil {
			return nil, unavailable("import", err)
		}
	}
	p := &ImportPlan{k: k}
	for _, r := range s.Keys {
		id := r.Fields["id"]
		hexD, err := k.rdb.Get(ctx, k.l.byID(id)).Result()
		switch {
		case errors.Is(err, redis.Nil):
		case err != nil:
			return nil, unavailable("import", err)
		case hexD != r.SHA256:
			return nil, fmt.Errorf("%w: key id %s belongs to another key in Redis", ErrInvalidState, id)
		}
		cur, err := k.rdb.HGetAll(ctx, k.l.record(r.SHA256)).Result()
		if err != nil {
			return nil, unavailable("import", err)
		}
		if len(cur) > 0 && cur["id"] != id {
			return nil, fmt.Errorf("%w: key %s's secret is another key's in Redis", ErrInvalidState, id)
		}
		merged, changed := mergeKey(cur, r.Fields)
		switch {
		case len(cur) == 0:
			p.added++
		case changed:
			p.updated++
		default:
			p.unchanged++
			continue
		}
		p.writes = append(p.writes, keyWrite{in: r, merged: merged, added: len(cur) == 0})
	}
	return p, nil
}

// Queue adds the plan's writes of phase to pipe, in the order Create
// writes (so that, where the writes cannot be one transaction, a failure
// half way never leaves a usable key uncounted): 0 the counts, 1 the id
// index, 2 the records.
func (p *ImportPlan) Queue(ctx context.Context, phase int, pipe redis.Pipeliner) {
	k := p.k
	now := k.now()
	for _, w := range p.writes {
		id := w.in.Fields["id"]
		switch phase {
		case 0:
			key, _, _ := decodeRecord(w.merged)
			mergeCountArgs := []any{now.UnixMilli(), id, membership(w.merged, now), expiryScore(key.ExpiresAt), key.CreatedAt.UnixMilli()}
			recountScript.EvalSha(ctx, pipe, k.l.counts(key.CompanyID), mergeCountArgs...)
		case 1:
			pipe.Set(ctx, k.l.byID(id), w.in.SHA256, 0)
		case 2:
			args := make([]any, 0, 2*len(w.in.Fields))
			for f, v := range w.in.Fields {
				args = append(args, f, v)
			}
			mergeScript.EvalSha(ctx, pipe, []string{k.l.record(w.in.SHA256)}, args...)
		}
	}
}

// Announce tells every instance to drop its copy of the keys the import
// changed (a revocation merged in): they would read them again within
// CacheTTL anyway.
func (p *ImportPlan) Announce(ctx context.Context) {
	for _, w := range p.writes {
		p.k.announce(ctx, w.in.Fields["id"], w.in.SHA256)
	}
}
