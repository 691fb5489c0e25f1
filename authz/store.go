package authz

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/invoicing-ao/gateway/invoicing"
	"github.com/redis/go-redis/v9"
)

// Redis layout, under Prefix (P):
//
//	P key:<sha256 hex>       hash   the key record; Verify reads it in one HGETALL
//	P id:<key id>            string the digest's hex, for Get, Revoke and Roll
//	P {<company>}:counted    zset   ids counting toward MaxActiveKeys: active and
//	                                not rolled, scored by expiry (ms; +inf: none)
//	P {<company>}:rolled     zset   ids rolled and still in their overlap, scored
//	                                by expiry; at most MaxActiveKeys of them
//	P {<company>}:keys       zset   every key id of the company, scored by creation (ms)
//	P {<company>}:active     set    before expiry existed: the counted ids; the next
//	                                script of the company moves them into counted
//	                                (no expiry) and deletes it
//	P revoked                pub/sub channel: digests of revoked or rolled keys
//
// The per-company keys share the hash tag {company}, so the scripts touching
// them are valid on Redis Cluster. The record and the id index live in other
// slots: they are written by separate commands, in an order chosen so that a
// crash never leaves a usable key uncounted (see Create and Roll). Every
// script of the company first drops from both sorted sets the ids whose
// expiry has passed (by the caller's clock): expired keys stop counting
// without anyone having to notice them expire.
type layout struct{ p string }

func (l layout) record(hexDigest string) string { return l.p + "key:" + hexDigest }
func (l layout) byID(id string) string          { return l.p + "id:" + id }
func (l layout) all(company string) string      { return l.p + "{" + company + "}:keys" }
func (l layout) channel() string                { return l.p + "revoked" }

// recordOf is the record of a digest: the one place its hex form is built.
func (l layout) recordOf(d *digest) string { return l.record(hex.EncodeToString(d[:])) }

// counts are the keys of a company's count, in the order every script of
// the company takes them: KEYS[1] counted, KEYS[2] rolled, KEYS[3] all,
// KEYS[4] the set of before expiry existed.
func (l layout) counts(company string) []string {
	c := l.p + "{" + company + "}:"
	return []string{c + "counted", c + "rolled", c + "keys", c + "active"}
}

// prelude starts every script of a company: it adopts the old set of active
// ids (keys of before expiry never expire), then forgets ids expired at
// ARGV[1] (now, ms).
const prelude = `
if redis.call('EXISTS', KEYS[4]) == 1 then
  for _, id in ipairs(redis.call('SMEMBERS', KEYS[4])) do
    redis.call('ZADD', KEYS[1], 'NX', '+inf', id)
  end
  redis.call('DEL', KEYS[4])
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', ARGV[1])
`

// countScript admits a new key id when the company has fewer than ARGV[2]
// counted keys: ARGV[3] id, ARGV[4] creation (ms), ARGV[5] expiry score.
// Check and add are one script, so concurrent creations cannot overshoot.
var countScript = redis.NewScript(prelude + `
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then return 0 end
redis.call('ZADD', KEYS[1], ARGV[5], ARGV[3])
redis.call('ZADD', KEYS[3], ARGV[4], ARGV[3])
return 1`)

// uncountScript forgets a key id that never became a key (ARGV[3] == "1"
// also removes it from the listing) or that was revoked (ARGV[3] == "0").
var uncountScript = redis.NewScript(prelude + `
redis.call('ZREM', KEYS[1], ARGV[2])
redis.call('ZREM', KEYS[2], ARGV[2])
if ARGV[3] == '1' then redis.call('ZREM', KEYS[3], ARGV[2]) end
return 1`)

// rollScript admits a roll: the old id ARGV[2] must be counted (active, not
// expired, not rolled); it moves to the rolled set, keeping its score until
// Roll has shortened the record's expiry (so a crash in between leaves a
// usable key counted, never uncounted), and the new id ARGV[3] (created
// ARGV[4], expiry score ARGV[5]) takes its place in the count. ARGV[6] says
// whether the old key outlives now (then the rolled set must have room for
// it, below ARGV[7]). It returns the old id's score, 0 when the old key is
// not rollable, -1 when the rolled set is full.
var rollScript = redis.NewScript(prelude + `
local score = redis.call('ZSCORE', KEYS[1], ARGV[2])
if not score then return 0 end
if ARGV[6] == '1' and redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[7]) then return -1 end
redis.call('ZREM', KEYS[1], ARGV[2])
redis.call('ZADD', KEYS[2], score, ARGV[2])
redis.call('ZADD', KEYS[1], ARGV[5], ARGV[3])
redis.call('ZADD', KEYS[3], ARGV[4], ARGV[3])
return {score}`)

// unrollScript takes back a roll whose writes failed: the old id ARGV[2]
// returns to the count with its score ARGV[4]; the new id ARGV[3] is
// forgotten.
var unrollScript = redis.NewScript(prelude + `
redis.call('ZREM', KEYS[1], ARGV[3])
redis.call('ZREM', KEYS[3], ARGV[3])
if redis.call('ZREM', KEYS[2], ARGV[2]) == 1 then
  redis.call('ZADD', KEYS[1], ARGV[4], ARGV[2])
end
return 1`)

// rescoreScript sets a rolled id's score (ARGV[2]) to its new expiry
// (ARGV[3]), once the record says so.
var rescoreScript = redis.NewScript(prelude + `
return redis.call('ZADD', KEYS[2], 'XX', ARGV[3], ARGV[2])`)

// revokeScript marks a record revoked once; revoking again keeps the first
// revocation time. It returns whether this call revoked it, then the record;
// nothing if there is none. A repeated revocation sets the state all the
// same: a command that changes nothing is not replicated, and the WAIT
// after a retried revocation must vouch for the first (internal/durable).
var revokeScript = redis.NewScript(`
local st = redis.call('HGET', KEYS[1], 'state')
if not st then return {} end
local changed = 0
if st ~= 'revoked' then
  redis.call('HSET', KEYS[1], 'state', 'revoked', 'revoked_at', ARGV[1])
  changed = 1
else
  redis.call('HSET', KEYS[1], 'state', 'revoked')
end
return {changed, redis.call('HGETALL', KEYS[1])}`)

// markRolledScript records on the old key's record that ARGV[1] replaces it
// and that it expires at ARGV[2] (ms), unless it expires sooner already.
// It returns the record, or nothing if there is none.
var markRolledScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return {} end
local exp = redis.call('HGET', KEYS[1], 'expires')
if not exp or exp == '' or tonumber(exp) > tonumber(ARGV[2]) then
  redis.call('HSET', KEYS[1], 'expires', ARGV[2])
end
redis.call('HSET', KEYS[1], 'replaced_by', ARGV[1])
return redis.call('HGETALL', KEYS[1])`)

// unmarkRolledScript undoes markRolledScript for the successor ARGV[1]
// whose roll failed, restoring the expiry ARGV[2] ("" for none).
var unmarkRolledScript = redis.NewScript(`
if redis.call('HGET', KEYS[1], 'replaced_by') ~= ARGV[1] then return 0 end
redis.call('HDEL', KEYS[1], 'replaced_by')
if ARGV[2] == '' then redis.call('HDEL', KEYS[1], 'expires') else redis.call('HSET', KEYS[1], 'expires', ARGV[2]) end
return 1`)

// touchScript records a use, never moving last_used backwards (instances
// flush out of order) and never recreating a record that is gone.
var touchScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local cur = redis.call('HGET', KEYS[1], 'last_used')
if cur and tonumber(cur) >= tonumber(ARGV[1]) then return 0 end
redis.call('HSET', KEYS[1], 'last_used', ARGV[1])
return 1`)

var errCorrupt = errors.New("authz: corrupt key record")

func ms(t time.Time) string { return strconv.FormatInt(t.UnixMilli(), 10) }

func encodeRecord(k Key) []any {
	rec := []any{
		"id", k.ID,
		"company", k.CompanyID,
		"mode", string(k.Mode),
		"scopes", k.Scopes.String(),
		"name", k.Name,
		"hint", k.Hint,
		"created", ms(k.CreatedAt),
		"state", k.State,
	}
	// Records of secrets of the first form have no "checksum" field: every
	// key made now has one.
	if !k.LegacyForm {
		rec = append(rec, "checksum", "1")
	}
	// Optional fields only when set: older records have none of them.
	for _, f := range [...]struct{ name, v string }{
		{"expires", optMS(k.ExpiresAt)}, {"replaces", k.Replaces}, {"cidrs", formatCIDRs(k.AllowedCIDRs)},
	} {
		if f.v != "" {
			rec = append(rec, f.name, f.v)
		}
	}
	return rec
}

// optMS is an optional time's record form: "" for none.
func optMS(t *time.Time) string {
	if t == nil {
		return ""
	}
	return ms(*t)
}

// expiryScore is a key's score in the count: its expiry, or +inf.
func expiryScore(t *time.Time) string {
	if t == nil {
		return "+inf"
	}
	return ms(*t)
}

// decodeRecord turns HGETALL's answer into a Key; an empty map means no
// record and is reported as (Key{}, false, nil).
func decodeRecord(m map[string]string) (Key, bool, error) {
	if len(m) == 0 {
		return Key{}, false, nil
	}
	k := Key{ID: m["id"], CompanyID: m["company"], Name: m["name"], Hint: m["hint"], State: m["state"]}
	var err error
	if k.Mode, err = invoicing.ParseMode(m["mode"]); err != nil {
		return Key{}, true, fmt.Errorf("%w %s: %w", errCorrupt, k.ID, err)
	}
	if k.Scopes, err = ParseScopes(m["scopes"]); err != nil {
		return Key{}, true, fmt.Errorf("%w %s: %w", errCorrupt, k.ID, err)
	}
	if k.State != StateActive && k.State != StateRevoked {
		return Key{}, true, fmt.Errorf("%w %s: state %q", errCorrupt, k.ID, invoicing.Clip(k.State))
	}
	created, ok := parseMS(m["created"])
	if !ok || k.ID == "" || k.CompanyID == "" {
		return Key{}, true, fmt.Errorf("%w %s: missing fields", errCorrupt, k.ID)
	}
	k.CreatedAt = created
	if t, ok := parseMS(m["last_used"]); ok {
		k.LastUsedAt = &t
	}
	if t, ok := parseMS(m["revoked_at"]); ok {
		k.RevokedAt = &t
	}
	if t, ok := parseMS(m["expires"]); ok {
		k.ExpiresAt = &t
	}
	k.Replaces, k.ReplacedBy = m["replaces"], m["replaced_by"]
	k.LegacyForm = m["checksum"] != "1"
	if k.AllowedCIDRs, err = parseStoredCIDRs(m["cidrs"]); err != nil {
		return Key{}, true, fmt.Errorf("%w %s: networks: %w", errCorrupt, k.ID, err)
	}
	return k, true, nil
}

func parseMS(s string) (time.Time, bool) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || s == "" {
		return time.Time{}, false
	}
	return time.UnixMilli(n).UTC(), true
}

// pairs turns a script's flat HGETALL reply into a map.
func pairs(v any) (map[string]string, error) {
	list, ok := v.([]any)
	if !ok || len(list)%2 != 0 {
		return nil, fmt.Errorf("%w: unexpected reply %T", errCorrupt, v)
	}
	m := make(map[string]string, len(list)/2)
	for i := 0; i < len(list); i += 2 {
		k, _ := list[i].(string)
		val, _ := list[i+1].(string)
		m[k] = val
	}
	return m, nil
}
