package tenants

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/invoicing-ao/gateway/invoicing"
	"github.com/redis/go-redis/v9"
)

// Leasing: how many tokens one instance may take from a company's shared
// bucket at once (lease.go explains the rest).
const (
	// leaseSpan: the tokens all instances of a company may hold together are
	// at most what the company's rate refills in this time (and half its
	// burst), so unspent tokens are never worth more than 0.1 s of the rate.
	leaseSpan = 100 * time.Millisecond
	// maxLease caps a lease whatever the limit (a lifted limit of 100,000/s
	// would otherwise lease 10,000 tokens at once).
	maxLease = 1000
	// instanceWindow: an instance counts as serving a company while its last
	// exchange with Redis for it is this recent.
	instanceWindow = time.Second
)

// refreshScript exchanges tokens of a batch of companies with their shared
// buckets in one atomic step. Per refresh, it reads the company's override
// (so a change reaches every instance on its next refresh), gives back the
// unspent tokens the instance returns, and takes up to the tokens asked for
// from the bucket, applying GCRA, the generic cell rate algorithm, to one
// stored "theoretical arrival time" (TAT) per company and mode: taking n
// tokens moves the TAT n intervals ahead, giving k back moves it k intervals
// back (never below now: a bucket holds at most its burst). Refreshes of a
// batch are taken one after the other, each seeing the previous one's effect,
// exactly as separate calls would; one call per batch saves Redis its
// per-call cost.
//
// It also answers how many tokens the instance may lease at most (lmax): the
// tokens the rate refills in leaseSpan or half the burst, whichever is
// smaller, shared among the instances that served the company within
// instanceWindow (each refresh records its instance, with its time, in a
// sorted set). Below 2 the limit is not leased: every request is one
// decision here, exact, and no instance is recorded.
//
// Time is Redis's own (TIME, once per batch), so the clocks of the instances
// cannot skew the global limit; writing after TIME needs effects replication,
// the default since Redis 5. Timestamps are microseconds in a Lua number (a
// float64, exact up to 2^53 µs, i.e. for centuries); the TAT is stored with
// %.17g because Redis would otherwise round a number to 14 digits when
// converting it. Only tokens taken move the TAT forward, so rejected requests
// cost nothing. A TAT further ahead than the current limit allows (the limit
// was just raised) is pulled back to an empty bucket under the new limit, and
// stored so, so a higher limit is never held back by debt run up under the
// lower one.
//
// An override outside the bounds of Limit.Validate (only a hand edit can store
// one) is ignored, as parseOverride does.
//
// KEYS, per refresh i: [3i-2] the TAT of the company and mode, [3i-1] the
// company's override hash, [3i] the instances of the company and mode (in
// Redis Cluster every key of one call must be of one company: see batch.go).
// ARGV: live default rate, live default burst, test default rate, test default
// burst, this instance's id, then per refresh its mode ("live" or "test": the
// override's fields are MODE_rate and MODE_burst), the tokens needed by the
// requests waiting, the tokens asked for (a lease: capped at lmax, so a limit
// lowered to an unleased one is exact at once) and the tokens given back.
// Reply: per refresh, {tokens granted, tokens left in the bucket, µs until
// the next token, µs until the bucket is full, rate, burst, lmax}, flattened.
var refreshScript = redis.NewScript(fmt.Sprintf(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local out = {}
for i = 1, #KEYS / 3 do
  local a = 5 + 4 * (i - 1)
  local m, need, want, give = ARGV[a + 1], tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3]), tonumber(ARGV[a + 4])
  local d = 1
  if m == 'test' then d = 3 end
  local rate, burst = ARGV[d], tonumber(ARGV[d + 1])
  local ov = redis.call('HMGET', KEYS[3 * i - 1], m .. '_rate', m .. '_burst')
  local orate, oburst = tonumber(ov[1]), tonumber(ov[2])
  if orate and oburst and orate >= %g and orate <= %d and oburst >= 1 and oburst < %d then
    rate, burst = ov[1], math.floor(oburst)
  end
  local r = tonumber(rate)
  local interval = 1000000 / r
  local tolerance = interval * burst
  local lmax = math.min(r * %g, burst / 2, %d)
  if lmax >= 2 then
    local ik = KEYS[3 * i]
    redis.call('ZADD', ik, now, ARGV[5])
    redis.call('ZREMRANGEBYSCORE', ik, '-inf', now - %d)
    redis.call('PEXPIRE', ik, %d)
    lmax = lmax / redis.call('ZCARD', ik)
  end
  lmax = math.max(1, math.floor(lmax))
  want = math.max(need, math.min(want, lmax))
  local tk = KEYS[3 * i - 2]
  local tat = tonumber(redis.call('GET', tk))
  local moved = false
  if not tat or tat < now then
    tat = now
  elseif tat > now + tolerance then
    tat, moved = now + tolerance, true
  end
  if give > 0 and tat > now then
    tat, moved = math.max(now, tat - give * interval), true
  end
  local avail = math.floor((now + tolerance - tat) / interval + 1e-9)
  local grant = math.max(0, math.min(want, avail))
  if grant > 0 then
    tat, moved = tat + grant * interval, true
  end
  if moved then
    if tat > now then
      redis.call('SET', tk, string.format('%%.17g', tat), 'PX', math.ceil((tat - now) / 1000))
    else
      redis.call('DEL', tk)
    end
  end
  local n = #out
  out[n + 1], out[n + 2] = grant, avail - grant
  out[n + 3], out[n + 4] = math.max(0, math.ceil(tat + interval - tolerance - now)), math.ceil(tat - now)
  out[n + 5], out[n + 6], out[n + 7] = rate, burst, lmax
end
return out
`, MinRate, MaxRate, MaxBurst+1, leaseSpan.Seconds(), maxLease, instanceWindow.Microseconds(), 2*instanceWindow.Milliseconds()))

// replyLen is the number of values per refresh in the script's reply.
const replyLen = 7

// errBadReply means the script answered something this code does not expect.
var errBadReply = errors.New("tenants: unexpected reply from the rate limit script")

// keys of one company. The company ID is a hash tag, so that the keys of one
// company share a slot in Redis Cluster and the script may touch them together.
func tatKey(prefix, companyID string, m invoicing.Mode) string {
	return prefix + "{" + companyID + "}:tat:" + m.Lower()
}

func overrideKey(prefix, companyID string) string {
	return prefix + "{" + companyID + "}:limits"
}

func instancesKey(prefix, companyID string, m invoicing.Mode) string {
	return prefix + "{" + companyID + "}:instances:" + m.Lower()
}

// Fields of the override hash, per mode: MODE_rate and MODE_burst, as the
// script builds them from modeField; indexed by Mode.Index.
var (
	modeField  = [2]string{"live", "test"}
	rateField  = [2]string{"live_rate", "test_rate"}
	burstField = [2]string{"live_burst", "test_burst"}
)

// parseOverride reads one mode's override from the hash fields, as the script
// does: a missing or unusable value means the default applies.
func parseOverride(rate, burst any) (Limit, bool) {
	rs, ok1 := rate.(string)
	bs, ok2 := burst.(string)
	if !ok1 || !ok2 {
		return Limit{}, false
	}
	r, err1 := strconv.ParseFloat(rs, 64)
	b, err2 := strconv.ParseFloat(bs, 64)
	if err1 != nil || err2 != nil || !(b >= 1 && b < MaxBurst+1) {
		return Limit{}, false
	}
	lim := Limit{Rate: r, Burst: int(b)}
	return lim, lim.Validate() == nil
}

// grant is the script's answer to one refresh.
type grant struct {
	tokens    int           // granted
	remaining int           // left in the bucket after the grant
	next      time.Duration // until the bucket holds one token more
	reset     time.Duration // until the bucket is full
	limit     Limit
	lmax      int // the most this instance may lease now; 1: not leased
}

// parseReply turns one refresh's part of the script's reply into a grant.
func parseReply(v any) (grant, error) {
	a, ok := v.([]any)
	if !ok || len(a) != replyLen {
		return grant{}, fmt.Errorf("%w: %T of length %d", errBadReply, v, len(a))
	}
	var n [replyLen]int64
	for _, i := range [...]int{0, 1, 2, 3, 5, 6} {
		x, ok := a[i].(int64)
		if !ok {
			return grant{}, fmt.Errorf("%w: element %d is %T", errBadReply, i, a[i])
		}
		n[i] = x
	}
	rs, ok := a[4].(string)
	if !ok {
		return grant{}, fmt.Errorf("%w: rate is %T", errBadReply, a[4])
	}
	r, err := strconv.ParseFloat(rs, 64)
	if err != nil {
		return grant{}, fmt.Errorf("%w: rate %q", errBadReply, rs)
	}
	if n[0] < 0 || n[6] < 1 {
		return grant{}, fmt.Errorf("%w: %d tokens granted, lease bound %d", errBadReply, n[0], n[6])
	}
	return grant{
		tokens:    int(n[0]),
		remaining: int(n[1]),
		next:      time.Duration(n[2]) * time.Microsecond,
		reset:     time.Duration(n[3]) * time.Microsecond,
		limit:     Limit{Rate: r, Burst: int(n[5])},
		lmax:      int(n[6]),
	}, nil
}
