package tenants

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// allowScript is the whole admission decision in one atomic step: it reads the
// company's override (so a change reaches every instance on its next request),
// and applies GCRA, the generic cell rate algorithm, to one stored "theoretical
// arrival time" (TAT) per company and mode.
//
// Time is Redis's own (TIME), so the clocks of the instances cannot skew the
// global limit; writing after TIME needs effects replication, the default
// since Redis 5. Timestamps are microseconds in a Lua number (a float64, exact
// up to 2^53 µs, i.e. for centuries); the TAT is stored with %.17g because
// Redis would otherwise round a number to 14 digits when converting it.
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
// KEYS[1] TAT of the company and mode, KEYS[2] the company's override hash.
// ARGV: rate field, burst field, default rate, default burst.
// Reply: {allowed 0|1, remaining, retry after µs, reset µs, rate, burst}.
var allowScript = redis.NewScript(fmt.Sprintf(`
local rate, burst = ARGV[3], tonumber(ARGV[4])
local ov = redis.call('HMGET', KEYS[2], ARGV[1], ARGV[2])
local orate, oburst = tonumber(ov[1]), tonumber(ov[2])
if orate and oburst and orate >= %g and orate <= %d and oburst >= 1 and oburst < %d then
  rate, burst = ov[1], math.floor(oburst)
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local interval = 1000000 / tonumber(rate)
local tolerance = interval * burst
local tat = tonumber(redis.call('GET', KEYS[1]))
if not tat or tat < now then
  tat = now
elseif tat > now + tolerance then
  tat = now + tolerance
  redis.call('SET', KEYS[1], string.format('%%.17g', tat), 'PX', math.ceil(tolerance / 1000))
end
local newtat = tat + interval
local allowat = newtat - tolerance
if allowat > now then
  return {0, 0, math.ceil(allowat - now), math.ceil(tat - now), rate, burst}
end
redis.call('SET', KEYS[1], string.format('%%.17g', newtat), 'PX', math.ceil((newtat - now) / 1000))
return {1, math.floor((now - allowat) / interval), 0, math.ceil(newtat - now), rate, burst}
`, MinRate, MaxRate, MaxBurst+1))

// errBadReply means the script answered something this code does not expect.
var errBadReply = errors.New("tenants: unexpected reply from the rate limit script")

// keys of one company. The company ID is a hash tag, so that the keys of one
// company share a slot in Redis Cluster and the script may touch them together.
func tatKey(prefix, companyID string, m mode) string {
	if m == test {
		return prefix + "{" + companyID + "}:tat:test"
	}
	return prefix + "{" + companyID + "}:tat:live"
}

func overrideKey(prefix, companyID string) string {
	return prefix + "{" + companyID + "}:limits"
}

// Fields of the override hash, per mode.
var (
	rateField  = [2]string{live: "live_rate", test: "test_rate"}
	burstField = [2]string{live: "live_burst", test: "test_burst"}
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
