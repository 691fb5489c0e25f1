package events

import "github.com/redis/go-redis/v9"

// The queue's scripts. Every key is built from ARGV[1], the layout's prefix
// P{events}:, so all share one hash tag; KEYS[1] (the ready set) routes
// the script to its node.

// scheduleFn sets an endpoint's place in the ready set from its state: due
// when its queue has work due and it has room for another delivery in
// flight (rr later than now, to take its turn behind the endpoints already
// due), or when its earliest lease ends (a lost delivery comes back); out of
// the set when neither, or when disabled.
const scheduleFn = `
local pfx = ARGV[1]
local function schedule(ep, now, rr, perEndpoint)
  local epk = pfx .. 'ep:' .. ep
  if redis.call('HGET', epk, 'enabled') ~= '1' then redis.call('ZREM', KEYS[1], ep) return end
  local l = pfx .. 'lease:' .. ep
  local q = redis.call('ZRANGE', pfx .. 'q:' .. ep, 0, 0, 'WITHSCORES')
  local first = redis.call('ZRANGE', l, 0, 0, 'WITHSCORES')
  local cap = perEndpoint
  if redis.call('HEXISTS', epk, 'failing') == 1 then cap = 1 end
  local nxt = nil
  if #q > 0 and redis.call('ZCARD', l) < cap then nxt = math.max(tonumber(q[2]), now + rr) end
  if #first > 0 and (nxt == nil or tonumber(first[2]) < nxt) then nxt = tonumber(first[2]) end
  if nxt then redis.call('ZADD', KEYS[1], nxt, ep) else redis.call('ZREM', KEYS[1], ep) end
end
`

// trimFn drops from an endpoint's queue and log what was queued before
// cutoff (ms): past the retention, its message and records are gone (those
// of a disabled endpoint too, whose events wait only that long). At most 500
// a call, so that a script stays short. Entries due before cutoff go as
// well, whatever the log says: they were queued before it too.
const trimFn = `
local function trim(ep, cutoff)
  local q, log = pfx .. 'q:' .. ep, pfx .. 'log:' .. ep
  local old = redis.call('ZRANGEBYSCORE', log, '-inf', '(' .. cutoff, 'LIMIT', 0, 500)
  if #old > 0 then
    redis.call('ZREM', q, unpack(old))
    redis.call('ZREM', log, unpack(old))
  end
  redis.call('ZREMRANGEBYSCORE', q, '-inf', '(' .. cutoff)
  return #old
end
`

// enqueueScript queues a batch of events and moves a detector's watermark,
// in one step. Nothing is done when the endpoints changed since the events
// were routed (ARGV[12], "v" and the endpoints' version the detector read,
// or "" when the events were not routed by a detector) ({-2}): a step that
// read the endpoints before an import restored some would route the events
// of the window the import rewinds to none of them, and move the watermark
// past them. Nothing is done either when the watermark (ARGV[2]; "" for
// none: the sweep's) is not ARGV[3] ("" when absent): another detector
// moved it ({-1}). Else each event that is neither kept (its message:
// detecting a change twice queues it once) nor remembered (its marker, in
// one of the generations ARGV[8] to ARGV[9]) is queued for those of its
// endpoints that exist and, if there is one, remembered (in generation
// ARGV[9], kept ARGV[10] ms), and the watermark becomes ARGV[4]. ARGV[5]
// now (ms), ARGV[6] retention (ms), ARGV[7] per-endpoint cap, ARGV[11] the
// feed's window (ms; 0: no feed), then per event: id, marker shard, marker
// member, message, type, resource, mode, company, body (feed.go: each
// event not recorded yet is recorded in its company's feed, endpoints or
// not), n, and n endpoint ids. It returns the number of new events, then
// for each event the deliveries it queued (-1: the event was queued
// before, or has no endpoint left), which the metrics count, then how many
// events the feed recorded.
var enqueueScript = redis.NewScript(scheduleFn + trimFn + feedTrimFn + feedRecordFn + `
if ARGV[12] ~= '' and 'v' .. (redis.call('GET', pfx .. 'ver') or '') ~= ARGV[12] then return {-2} end
if ARGV[2] ~= '' and (redis.call('GET', ARGV[2]) or '') ~= ARGV[3] then return {-1} end
local now, ttl, cap = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
local gOld, gNow = tonumber(ARGV[8]), tonumber(ARGV[9])
-- Endpoints are checked, trimmed and scheduled once a batch, not once an
-- event: a page of a backlog holds hundreds of events for one endpoint.
local eps, touched, feeds, fwin, recorded = {}, {}, {}, tonumber(ARGV[11]), 0
local out, i = {0}, 13
while i <= #ARGV do
  local id, shard, member, n, queued = ARGV[i], ARGV[i + 1], ARGV[i + 2], tonumber(ARGV[i + 9]), -1
  if fwin > 0 then
    recorded = recorded + feedRecord(id, shard, member, ARGV[i + 4], ARGV[i + 6], ARGV[i + 7], ARGV[i + 8], gOld, gNow, ARGV[10], feeds)
  end
  local msg = pfx .. 'msg:' .. id
  local seen = redis.call('EXISTS', msg) == 1
  if not seen then
    -- Newest first: an event found again is most often a recent one.
    for g = gNow, gOld, -1 do
      if redis.call('SISMEMBER', pfx .. 'seen:' .. g .. ':' .. shard, member) == 1 then seen = true break end
    end
  end
  local live = {}
  if not seen then
    for j = 1, n do
      local ep = ARGV[i + 9 + j]
      if eps[ep] == nil then eps[ep] = redis.call('EXISTS', pfx .. 'ep:' .. ep) == 1 end
      if eps[ep] then live[#live + 1] = ep end
    end
    -- An event none of whose endpoints exists (they were read before
    -- Redis lost them) is neither kept nor remembered, nor counted (-1):
    -- endpoints an import restores must still receive it when detection
    -- reads it again.
  end
  if #live > 0 then
    local m = pfx .. 'seen:' .. gNow .. ':' .. shard
    redis.call('SADD', m, member)
    redis.call('PEXPIRE', m, ARGV[10])
    redis.call('SET', msg, ARGV[i + 3], 'PX', ttl)
    out[1] = out[1] + 1
    queued = 0
    for _, ep in ipairs(live) do
      local d = pfx .. 'd:' .. ep .. ':' .. id
      redis.call('HSET', d, 'st', 'pending', 'n', 0, 'at', now, 'nx', now, 'ty', ARGV[i + 4], 'rid', ARGV[i + 5])
      redis.call('PEXPIRE', d, ttl)
      redis.call('ZADD', pfx .. 'q:' .. ep, now, id)
      redis.call('ZADD', pfx .. 'log:' .. ep, now, id)
      if not touched[ep] then
        touched[ep] = true
        touched[#touched + 1] = ep
      end
      queued = queued + 1
    end
  end
  out[#out + 1] = queued
  i = i + 10 + n
end
for _, ep in ipairs(touched) do
  trim(ep, now - ttl)
  schedule(ep, now, 0, cap)
end
for _, f in ipairs(feeds) do feedTrim(f[1], f[2], fwin) end
if ARGV[4] ~= '' then redis.call('SET', ARGV[2], ARGV[4]) end
out[#out + 1] = recorded
return out`)

// trimScript trims the queues and logs of endpoints (ARGV[5]...) of what
// was queued a retention (ARGV[3] ms) before now (ARGV[2]), and sets their
// place in the ready set (ARGV[4] the per-endpoint cap). It returns how
// many entries it dropped.
var trimScript = redis.NewScript(scheduleFn + trimFn + `
local now, ttl, cap, n = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), 0
for i = 5, #ARGV do
  n = n + trim(ARGV[i], now - ttl)
  schedule(ARGV[i], now, 0, cap)
end
return n`)

// claimScript leases up to ARGV[3] due deliveries for ARGV[4] ms, taking at
// most an endpoint's room (ARGV[5] in flight; 1 while it is failing) from
// each ready endpoint in turn, oldest due first, and sends each endpoint it
// served to the back. Expired leases (an instance died mid-delivery) come
// back first. It returns endpoint, event, attempts made, for each.
var claimScript = redis.NewScript(scheduleFn + `
local now, max, lease, per = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local out, taken = {}, 0
for _, ep in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, 100)) do
  if taken >= max then break end
  local q, l, epk = pfx .. 'q:' .. ep, pfx .. 'lease:' .. ep, pfx .. 'ep:' .. ep
  for _, id in ipairs(redis.call('ZRANGEBYSCORE', l, '-inf', now)) do
    redis.call('ZREM', l, id)
    redis.call('ZADD', q, now, id)
  end
  if redis.call('HGET', epk, 'enabled') == '1' then
    local cap = per
    if redis.call('HEXISTS', epk, 'failing') == 1 then cap = 1 end
    local room = math.min(cap - redis.call('ZCARD', l), max - taken)
    if room > 0 then
      for _, id in ipairs(redis.call('ZRANGEBYSCORE', q, '-inf', now, 'LIMIT', 0, room)) do
        redis.call('ZREM', q, id)
        redis.call('ZADD', l, now + lease, id)
        out[#out + 1] = ep
        out[#out + 1] = id
        out[#out + 1] = redis.call('HGET', pfx .. 'd:' .. ep .. ':' .. id, 'n') or '0'
        taken = taken + 1
      end
    end
  end
  schedule(ep, now, 1, per)
end
return out`)

// completeScript records an attempt (ARGV[2] endpoint, ARGV[3] event,
// ARGV[4] now, ARGV[5] outcome: ok, retry, failed or expired, ARGV[6] the
// attempt as JSON, ARGV[7] when to retry, ARGV[8] the error, ARGV[9] how
// long failing disables, ARGV[10] retention, ARGV[11] per-endpoint cap,
// ARGV[12] attempts kept, ARGV[13] the reason of a disabling). A delivery
// whose lease was lost (it took too long and another instance has it now)
// records its attempt and changes nothing else (0).
var completeScript = redis.NewScript(scheduleFn + `
local ep, id, now, outcome = ARGV[2], ARGV[3], tonumber(ARGV[4]), ARGV[5]
local d, epk = pfx .. 'd:' .. ep .. ':' .. id, pfx .. 'ep:' .. ep
-- The record is written only while it exists, so that it keeps the expiry
-- it was made with: one past the retention (expired meanwhile) is not made
-- again, forever. Its attempts expire with it.
local kept = redis.call('PTTL', d)
if kept == -1 then
  kept = tonumber(ARGV[10])
  redis.call('PEXPIRE', d, kept)
end
local has = kept > 0
if ARGV[6] ~= '' and has then
  local a = pfx .. 'a:' .. ep .. ':' .. id
  redis.call('RPUSH', a, ARGV[6])
  redis.call('LTRIM', a, -tonumber(ARGV[12]), -1)
  redis.call('PEXPIRE', a, kept)
end
if redis.call('ZREM', pfx .. 'lease:' .. ep, id) == 0 or redis.call('EXISTS', epk) == 0 then return 0 end
if has and outcome ~= 'expired' then redis.call('HINCRBY', d, 'n', 1) end
if outcome == 'ok' then
  if has then
    redis.call('HSET', d, 'st', 'delivered', 'done', now)
    redis.call('HDEL', d, 'nx')
  end
  redis.call('HSET', epk, 'ok', now)
  redis.call('HDEL', epk, 'failing', 'err')
elseif outcome == 'retry' then
  if has then
    redis.call('HSET', d, 'st', 'pending', 'nx', ARGV[7])
    redis.call('ZADD', pfx .. 'q:' .. ep, ARGV[7], id)
  end
elseif has then
  redis.call('HSET', d, 'st', outcome, 'done', now)
  redis.call('HDEL', d, 'nx')
end
if outcome == 'retry' or outcome == 'failed' then
  redis.call('HSET', epk, 'err', ARGV[8])
  local since = tonumber(redis.call('HGET', epk, 'failing') or '')
  if since == nil then
    redis.call('HSET', epk, 'failing', now)
    since = now
  end
  if now - since >= tonumber(ARGV[9]) and redis.call('HGET', epk, 'enabled') == '1' then
    redis.call('HSET', epk, 'enabled', '0', 'disabled', now, 'why', ARGV[13])
  end
end
schedule(ep, now, 0, tonumber(ARGV[11]))
return 1`)
