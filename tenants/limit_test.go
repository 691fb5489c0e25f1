package tenants

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/invoicing"
	"github.com/redis/go-redis/v9"
)

// A limit out of bounds is refused naming its field, rate or burst.
func TestLimitValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		lim   Limit
		field string // "": valid
	}{
		{Limit{Rate: 50, Burst: 100}, ""},
		{Limit{Rate: MinRate, Burst: 1}, ""},
		{Limit{Rate: MaxRate, Burst: MaxBurst}, ""},
		{Limit{Rate: 0.5, Burst: 1}, ""},
		{Limit{Rate: 0, Burst: 10}, "rate"},
		{Limit{Rate: -1, Burst: 10}, "rate"},
		{Limit{Rate: MinRate / 2, Burst: 10}, "rate"},
		{Limit{Rate: MaxRate + 1, Burst: 10}, "rate"},
		{Limit{Rate: math.NaN(), Burst: 10}, "rate"},
		{Limit{Rate: math.Inf(1), Burst: 10}, "rate"},
		{Limit{Rate: 10, Burst: 0}, "burst"},
		{Limit{Rate: 10, Burst: -3}, "burst"},
		{Limit{Rate: 10, Burst: MaxBurst + 1}, "burst"},
	} {
		err := tc.lim.Validate()
		var fe *invoicing.FieldError
		if tc.field == "" {
			if err != nil {
				t.Errorf("%+v.Validate() = %v, want nil", tc.lim, err)
			}
			continue
		}
		if !errors.Is(err, ErrInvalidLimit) || !errors.As(err, &fe) || fe.Field != tc.field || !strings.HasPrefix(fe.Message, "must be ") {
			t.Errorf("%+v.Validate() = %v, want ErrInvalidLimit naming %s", tc.lim, err, tc.field)
		}
	}
}

// TestModeValidity: the limiter takes only the two modes, exactly as the
// vocabulary spells them (callers parse what people type).
func TestModeValidity(t *testing.T) {
	t.Parallel()
	l := New(Config{Redis: redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})})
	for _, in := range []invoicing.Mode{"live", "", "PROD"} {
		if _, err := l.Allow(context.Background(), "acme", in); !errors.Is(err, invoicing.ErrInvalidMode) {
			t.Errorf("Allow mode %q: %v, want invoicing.ErrInvalidMode", in, err)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer rdb.Close()
	for _, tc := range []struct {
		name string
		cfg  Config
		ok   bool
	}{
		{"zero values but Redis", Config{Redis: rdb}, true},
		{"no Redis", Config{}, false},
		{"brace in prefix", Config{Redis: rdb, Prefix: "t{x}:"}, false},
		{"bad live default", Config{Redis: rdb, LiveDefault: Limit{Rate: -5}}, false},
		{"bad test default", Config{Redis: rdb, TestDefault: Limit{Burst: -5}}, false},
		{"a live rate alone, with the default burst", Config{Redis: rdb, LiveDefault: Limit{Rate: 5}}, true},
		{"a test burst alone, with the default rate", Config{Redis: rdb, TestDefault: Limit{Burst: 5}}, true},
		{"negative timeout", Config{Redis: rdb, RedisTimeout: -time.Second}, false},
		{"negative retry", Config{Redis: rdb, RetryEvery: -time.Second}, false},
		{"negative lease TTL", Config{Redis: rdb, LeaseTTL: -time.Second}, false},
		{"lease TTL of a second", Config{Redis: rdb, LeaseTTL: time.Second}, false},
		{"longest lease TTL", Config{Redis: rdb, LeaseTTL: MaxLeaseTTL}, true},
	} {
		if err := tc.cfg.Validate(); (err == nil) != tc.ok {
			t.Errorf("%s: Validate() = %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
	d := Config{Redis: rdb}.withDefaults()
	if d.Prefix != "tenants:" || d.LiveDefault != (Limit{50, 100}) || d.TestDefault != (Limit{10, 20}) ||
		d.RedisTimeout != 50*time.Millisecond || d.RetryEvery != time.Second || d.LeaseTTL != 500*time.Millisecond ||
		d.Now == nil || d.Logger == nil {
		t.Errorf("defaults: %+v", d)
	}
	// Each half of a default limit set alone keeps the other half's
	// default, as a configuration that sets only liveRate expects.
	if live, test := (Config{LiveDefault: Limit{Rate: 5}, TestDefault: Limit{Burst: 7}}).Defaults(); live != (Limit{5, 100}) || test != (Limit{10, 7}) {
		t.Errorf("defaults of halves: %+v %+v", live, test)
	}
}

// hashTag is the part of a key Redis Cluster hashes to choose its slot.
func hashTag(key string) string {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			return key[i+1 : i+1+j]
		}
	}
	return key
}

func TestKeysShareOneSlot(t *testing.T) {
	t.Parallel()
	for _, id := range []string{"c1", "6f1c2d3e-0000-4000-8000-000000000001", "we}ird", "{odd", "a b"} {
		keys := []string{tatKey("tenants:", id, invoicing.Live), tatKey("tenants:", id, invoicing.Test), overrideKey("tenants:", id),
			instancesKey("tenants:", id, invoicing.Live), instancesKey("tenants:", id, invoicing.Test)}
		for _, k := range keys[1:] {
			if hashTag(k) != hashTag(keys[0]) {
				t.Errorf("company %q: %q and %q hash differently", id, keys[0], k)
			}
		}
		if tatKey("tenants:", id, invoicing.Live) == tatKey("tenants:", id, invoicing.Test) ||
			instancesKey("tenants:", id, invoicing.Live) == instancesKey("tenants:", id, invoicing.Test) {
			t.Errorf("company %q: LIVE and TEST share a key", id)
		}
	}
	if hashTag(tatKey("p:", "c1", invoicing.Live)) == hashTag(tatKey("p:", "c2", invoicing.Live)) {
		t.Error("two companies share a slot by construction")
	}
}

func TestParseOverride(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		rate, burst any
		want        Limit
		ok          bool
	}{
		{"100", "10", Limit{100, 10}, true},
		{"0.5", "1", Limit{0.5, 1}, true},
		{"2.5", "7.9", Limit{2.5, 7}, true}, // as the script: burst floored
		{nil, nil, Limit{}, false},
		{"100", nil, Limit{}, false},
		{nil, "10", Limit{}, false},
		{"x", "10", Limit{}, false},
		{"0", "10", Limit{}, false},
		{"-5", "10", Limit{}, false},
		{"100", "0", Limit{}, false},
		{"1e9", "10", Limit{}, false},
		{"100", "1e9", Limit{}, false},
		{"NaN", "10", Limit{}, false},
		{"inf", "10", Limit{}, false},
	} {
		got, ok := parseOverride(tc.rate, tc.burst)
		if ok != tc.ok || (ok && got != tc.want) {
			t.Errorf("parseOverride(%v, %v) = %+v, %v; want %+v, %v", tc.rate, tc.burst, got, ok, tc.want, tc.ok)
		}
	}
}

func TestParseReply(t *testing.T) {
	t.Parallel()
	good := []any{int64(3), int64(4), int64(0), int64(250000), "20", int64(5), int64(2)}
	g, err := parseReply(good)
	want := grant{tokens: 3, remaining: 4, reset: 250 * time.Millisecond, limit: Limit{20, 5}, lmax: 2}
	if err != nil || g != want {
		t.Errorf("parseReply(good) = %+v, %v; want %+v", g, err, want)
	}
	g, err = parseReply([]any{int64(0), int64(0), int64(1500), int64(9000), "0.5", int64(1), int64(1)})
	want = grant{next: 1500 * time.Microsecond, reset: 9 * time.Millisecond, limit: Limit{0.5, 1}, lmax: 1}
	if err != nil || g != want {
		t.Errorf("parseReply(none granted) = %+v, %v; want %+v", g, err, want)
	}
	for _, bad := range []any{
		nil,
		"OK",
		good[:6],
		[]any{"1", int64(4), int64(0), int64(250000), "20", int64(5), int64(1)},
		[]any{int64(1), int64(4), int64(0), int64(250000), int64(20), int64(5), int64(1)},
		[]any{int64(1), int64(4), int64(0), int64(250000), "twenty", int64(5), int64(1)},
		[]any{int64(-1), int64(4), int64(0), int64(250000), "20", int64(5), int64(1)},
		[]any{int64(1), int64(4), int64(0), int64(250000), "20", int64(5), int64(0)},
	} {
		if _, err := parseReply(bad); !errors.Is(err, errBadReply) {
			t.Errorf("parseReply(%#v) = %v, want errBadReply", bad, err)
		}
	}
}
