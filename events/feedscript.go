package events

import "github.com/redis/go-redis/v9"

// The feed's scripts (feed.go). Every key is built from the layout's prefix
// P{events}:, so the feed shares the queue's hash tag and the enqueue script
// can record an event in the feed in the same step as it queues it.

// feedTrimFn drops from a feed (its mode and company) the events recorded
// more than window ms before Redis's clock (whose clock made the entries'
// ids), and remembers the last one it dropped in the mode's
// cut hash: a cursor before that is one whose walk would skip what was
// dropped (readFeedScript refuses it). A feed left empty is deleted (its
// cut stays). It returns whether the feed still exists.
const feedTrimFn = `
local function feedTrim(mode, co, window)
  local t = redis.call('TIME')
  local cutoff = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) - window
  local fk = pfx .. 'feed:' .. mode .. ':' .. co
  local last = redis.call('XREVRANGE', fk, '(' .. cutoff .. '-0', '-', 'COUNT', 1)
  if #last > 0 then
    redis.call('HSET', pfx .. 'fcut:' .. mode, co, last[1][1])
    redis.call('XTRIM', fk, 'MINID', cutoff .. '-0')
  end
  if redis.call('XLEN', fk) == 0 then
    redis.call('DEL', fk)
    redis.call('SREM', pfx .. 'feeds:' .. mode, co)
    return false
  end
  return true
end
`

// feedRecordFn records an event in its company's feed unless a feed marker
// (in the generations gOld to gNow, kept keep ms) says it was recorded
// before: a change read twice (the sweep, a later change of its row that
// says nothing new) is in the feed once. touched collects the feeds
// written, to be trimmed once per batch. It returns 1 when recorded.
const feedRecordFn = `
local function feedRecord(id, shard, member, ty, mode, co, body, gOld, gNow, keep, touched)
  for g = gNow, gOld, -1 do
    if redis.call('SISMEMBER', pfx .. 'fseen:' .. g .. ':' .. shard, member) == 1 then return 0 end
  end
  local m = pfx .. 'fseen:' .. gNow .. ':' .. shard
  redis.call('SADD', m, member)
  redis.call('PEXPIRE', m, keep)
  redis.call('XADD', pfx .. 'feed:' .. mode .. ':' .. co, '*', 'i', id, 't', ty, 'b', body)
  local k = mode .. ':' .. co
  if not touched[k] then
    touched[k] = true
    touched[#touched + 1] = {mode, co}
    redis.call('SADD', pfx .. 'feeds:' .. mode, co)
  end
  return 1
end
`

// feedTrimScript trims the feeds of a mode (ARGV[2]) of the companies
// ARGV[4]... to what was recorded within the window ARGV[3] (ms); feeds that got
// nothing new for a while are trimmed by it, the others as they are written.
var feedTrimScript = redis.NewScript(`local pfx = ARGV[1]` + feedTrimFn + `
for i = 4, #ARGV do feedTrim(ARGV[2], ARGV[i], tonumber(ARGV[3])) end
return 0`)

// readFeedScript reads a page of the feed KEYS[1] (KEYS[2]: its mode's cut
// hash). ARGV[1] 'asc' or 'desc'; ARGV[2] the exclusive position to start
// after ("" for the start); ARGV[3], ARGV[4] the lowest and highest
// positions to read (XRANGE bounds: "-", "+", "<ms>-0" or "(<ms>-0");
// ARGV[5] the page's size; ARGV[6] how many events it may read at most
// (the type filter can skip many); ARGV[7] the company; ARGV[8]... the
// types wanted (none: every type).
//
// It answers {"expired", cut} when an oldest-first cursor is before the
// last event trimmed (the walk would skip it), else {"ok", next, more,
// then position, id and body of each event}: next is the position of the
// last event read ("" when none was: the caller keeps its own), more is 1
// when the read stopped before the end of the range.
var readFeedScript = redis.NewScript(`
local asc, after, lo, hi = ARGV[1] == 'asc', ARGV[2], ARGV[3], ARGV[4]
local limit, budget = tonumber(ARGV[5]), tonumber(ARGV[6])
local function less(a, b)
  local am, as = string.match(a, '^(%d+)-(%d+)$')
  local bm, bs = string.match(b, '^(%d+)-(%d+)$')
  am, bm = tonumber(am), tonumber(bm)
  return am < bm or (am == bm and tonumber(as) < tonumber(bs))
end
if asc and after ~= '' then
  local cut = redis.call('HGET', KEYS[2], ARGV[7])
  if cut and less(after, cut) then return {'expired', cut} end
end
local wanted, any = {}, #ARGV < 8
for i = 8, #ARGV do wanted[ARGV[i]] = true end
-- The start: after the cursor, within the range.
if after ~= '' then
  if asc and (lo == '-' or not less(after, string.match(lo, '[%d-]+'))) then lo = '(' .. after end
  if not asc and (hi == '+' or less(after, string.match(hi, '[%d-]+'))) then hi = '(' .. after end
end
local out, next, read, more = {}, '', 0, 0
while true do
  -- Every type: read what the page needs; some types: twice that, as most
  -- may be skipped.
  local need = limit - #out / 3
  if not any then need = need * 2 end
  local n = math.min(need, budget - read, 200)
  if n <= 0 then more = 1 break end
  local batch
  if asc then batch = redis.call('XRANGE', KEYS[1], lo, hi, 'COUNT', n)
  else batch = redis.call('XREVRANGE', KEYS[1], hi, lo, 'COUNT', n) end
  local full = false
  for _, e in ipairs(batch) do
    read = read + 1
    next = e[1]
    -- The fields, in the order the enqueue script writes them: i, t, b.
    local f = e[2]
    if any or wanted[f[4]] then
      out[#out + 1] = e[1]
      out[#out + 1] = f[2]
      out[#out + 1] = f[6]
    end
    if #out / 3 >= limit then full = true break end
  end
  if full then
    -- More when anything follows in the range.
    local peek
    if asc then peek = redis.call('XRANGE', KEYS[1], '(' .. next, hi, 'COUNT', 1)
    else peek = redis.call('XREVRANGE', KEYS[1], '(' .. next, lo, 'COUNT', 1) end
    if #peek > 0 then more = 1 end
    break
  end
  if #batch < n then break end
  if asc then lo = '(' .. next else hi = '(' .. next end
end
local res = {'ok', next, tostring(more)}
for _, v in ipairs(out) do res[#res + 1] = v end
return res`)
