package tenants

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/invoicing-ao/gateway/invoicing"
	"github.com/redis/go-redis/v9"
)

// allowScript decides a batch of requests in one atomic step: for each, it
// reads the company's override (so a change reaches every instance on its next
// request), and applies GCRA, the generic cell rate algorithm, to one stored
// "theoretical arrival time" (TAT) per company and mode. The decisions of a
// batch are taken one after the other, each seeing the previous one's effect,
// exactly as separate calls would; one call per batch saves Redis the
// per-call cost (a Lua call, its argument tables, its reply) that used to be
// most of its work per decision.
//
// Time is Redis's own (TIME, once per batch), so the clocks of the instances
// cannot skew the global limit; writing after TIME needs effects replication,
// the default since Redis 5. Timestamps are microseconds in a Lua number (a
// float64, exact up to 2^53 µs, i.e. for centuries); the TAT is stored with
// %.17g because Redis would otherwise round a number to 14 digits when
// converting it.
//
// Only an admitted request moves the TAT, so rejected requests cost nothing
// and a client recovers as soon as it slows down. A TAT further ahead than the
// current limit allows (the limit was just raised) is pulled back to an empty
// bucket under the new limit, and stored so, so a higher limit is never held
// back by debt run up under the lower one.
//
// An override outside the bounds of Limit.Validate (only a hand edit can store
// one) is ignored, as parseOverride does.
//
// KEYS, per decision i: [2i-1] the TAT of the company and mode, [2i] the
// company's override hash (in Redis Cluster, every key of one call must be of
// one company: see batch.go).
// ARGV: live default rate, live default burst, test default rate, test default
// burst, then per decision its mode, "live" or "test" (the override's fields
// are MODE_rate and MODE_burst).
// Reply: per decision, {allowed 0|1, remaining, retry after µs, reset µs,
// rate, burst}, flattened.
var allowScript = redis.NewScript(fmt.Sprintf(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local out = {}
for i = 1, #KEYS / 2 do
  local m = ARGV[4 + i]
  local d = 1
  if m == 'test' then d = 3 end
  local rate, burst = ARGV[d], tonumber(ARGV[d + 1])
  local ov = redis.call('HMGET', KEYS[2 * i], m .. '_rate', m .. '_burst')
  local orate, oburst = tonumber(ov[1]), tonumber(ov[2])
  if orate and oburst and orate >= %g and orate <= %d and oburst >= 1 and oburst < %d then
    rate, burst = ov[1], math.floor(oburst)
  end
  local tk = KEYS[2 * i - 1]
  local interval = 1000000 / tonumber(rate)
  local tolerance = interval * burst
  local tat = tonumber(redis.call('GET', tk))
  if not tat or tat < now then
    tat = now
  elseif tat > now + tolerance then
    tat = now + tolerance
    redis.call('SET', tk, string.format('%%.17g', tat), 'PX', math.ceil(tolerance / 1000))
  end
  local newtat = tat + interval
  local allowat = newtat - tolerance
  local n = #out
  if allowat > now then
    out[n + 1], out[n + 2], out[n + 3], out[n + 4] = 0, 0, math.ceil(allowat - now), math.ceil(tat - now)
  else
    redis.call('SET', tk, string.format('%%.17g', newtat), 'PX', math.ceil((newtat - now) / 1000))
    out[n + 1], out[n + 2], out[n + 3], out[n + 4] = 1, math.floor((now - allowat) / interval), 0, math.ceil(newtat - now)
  end
  out[n + 5], out[n + 6] = rate, burst
end
return out
`, MinRate, MaxRate, MaxBurst+1))

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

// parseReply turns the script's reply into a Decision.
func parseReply(v any) (Decision, error) {
	a, ok := v.([]any)
	if !ok || len(a) != 6 {
		return Decision{}, fmt.Errorf("%w: %T of length %d", errBadReply, v, len(a))
	}
	var n [6]int64
	for _, i := range [...]int{0, 1, 2, 3, 5} {
		x, ok := a[i].(int64)
		if !ok {
			return Decision{}, fmt.Errorf("%w: element %d is %T", errBadReply, i, a[i])
		}
		n[i] = x
	}
	rs, ok := a[4].(string)
	if !ok {
		return Decision{}, fmt.Errorf("%w: rate is %T", errBadReply, a[4])
	}
	r, err := strconv.ParseFloat(rs, 64)
	if err != nil {
		return Decision{}, fmt.Errorf("%w: rate %q", errBadReply, rs)
	}
	return Decision{
		Allowed:    n[0] == 1,
		Limit:      Limit{Rate: r, Burst: int(n[5])},
		Remaining:  int(n[1]),
		RetryAfter: time.Duration(n[2]) * time.Microsecond,
		Reset:      time.Duration(n[3]) * time.Microsecond,
	}, nil
}
