package authz

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/invoicing-ao/gateway/invoicing"
	"github.com/redis/go-redis/v9"
)

// Redis layout, under Prefix (P):
//
//	P key:<sha256 hex>      hash   the key record; Verify reads it in one HGETALL
//	P id:<key id>           string the digest's hex, for Get and Revoke
//	P {<company>}:active    set    ids of the company's active keys
//	P {<company>}:keys      zset   every key id of the company, scored by creation (ms)
//	P revoked               pub/sub channel: digests of revoked keys
//
// The two per-company keys share the hash tag {company}, so the limit script
// touching both is valid on Redis Cluster. The record and the id index live
// in other slots: they are written by separate commands, in an order chosen
// so that a crash never leaves a usable key uncounted (see Create).
type layout struct{ p string }

func (l layout) record(hexDigest string) string { return l.p + "key:" + hexDigest }
func (l layout) byID(id string) string          { return l.p + "id:" + id }
func (l layout) active(company string) string   { return l.p + "{" + company + "}:active" }
func (l layout) all(company string) string      { return l.p + "{" + company + "}:keys" }
func (l layout) channel() string                { return l.p + "revoked" }

// countScript admits a new key id when the company has fewer than ARGV[1]
// active keys. Check and add are one script, so concurrent creations cannot
// overshoot the limit.
var countScript = redis.NewScript(`
if redis.call('SCARD', KEYS[1]) >= tonumber(ARGV[1]) then return 0 end
redis.call('SADD', KEYS[1], ARGV[2])
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[2])
return 1`)

// uncountScript forgets a key id that never became a key (ARGV[2] == "1"
// also removes it from the listing) or that was revoked (ARGV[2] == "0").
var uncountScript = redis.NewScript(`
redis.call('SREM', KEYS[1], ARGV[1])
if ARGV[2] == '1' then redis.call('ZREM', KEYS[2], ARGV[1]) end
return 1`)

// revokeScript marks a record revoked once; revoking again keeps the first
// revocation time. It returns the record, or nothing if there is none.
var revokeScript = redis.NewScript(`
local st = redis.call('HGET', KEYS[1], 'state')
if not st then return {} end
if st ~= 'revoked' then
  redis.call('HSET', KEYS[1], 'state', 'revoked', 'revoked_at', ARGV[1])
end
return redis.call('HGETALL', KEYS[1])`)

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
	return []any{
		"id", k.ID,
		"company", k.CompanyID,
		"mode", string(k.Mode),
		"scopes", k.Scopes.String(),
		"name", k.Name,
		"hint", k.Hint,
		"created", ms(k.CreatedAt),
		"state", k.State,
	}
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
