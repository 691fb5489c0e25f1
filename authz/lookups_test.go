package authz

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
)

// countingSource is a Source that counts how often it is asked.
type countingSource struct {
	a     netip.Addr
	asked atomic.Int64
}

func (s *countingSource) Addr() netip.Addr { s.asked.Add(1); return s.a }

func from(s string) Source { return Addr(netip.MustParseAddr(s)) }

// unknownSecret is the i-th of a series of well-formed secrets never issued,
// of the current form when i is even, of the first form when odd.
func unknownSecret(series string, i int) string {
	s := fmt.Sprintf("igw_live_%s%0*d", series, secretBody-len(series), i)
	if i%2 == 0 {
		return s + checksum(s)
	}
	return s
}

func TestLookupBound(t *testing.T) {
	t.Parallel()
	testenv.RedisBackends(t, func(t *testing.T, rdb *redis.Client, prefix string) {
		c := newClock()
		p := attachProbe(t, rdb)
		k := newRing(t, rdb, prefix, c, func(cfg *Config) {
			cfg.SourceLookups = LookupLimit{Rate: 1, Burst: 3}
			cfg.InstanceLookups = LookupLimit{Rate: 10, Burst: 8}
		})
		_, good := mustCreate(t, k, companyA, invoicing.Live, "invoices:read")
		_, fresh := mustCreate(t, k, companyA, invoicing.Live, "invoices:read")
		a := &countingSource{a: netip.MustParseAddr("198.51.100.7")}
		if _, err := k.VerifyFrom(ctx, good, a); err != nil {
			t.Fatal(err)
		}
		checkSourceBound(t, k, p, a)
		checkKnownKeyUnbounded(t, k, p, c, a, good)
		checkFoundKeysSpendNothing(t, k, a, fresh)
		checkIPv6SourcesAndInstanceBound(t, k)
		checkVerifyWithoutSource(t, k, c)

		st := k.LookupStats()
		wantStats := LookupStats{
			Known:   LookupResults{Found: 1},
			Unknown: LookupResults{Found: 2, Invalid: 3 + 1 + 6 + 1 + 3},
			Refused: map[string]uint64{"malformed": 0, "checksum": 0, "legacy_form": 0,
				"source_limit": 7 + 1 + 1 + 1 + 1, "instance_limit": 1 + 3},
		}
		if fmt.Sprint(st) != fmt.Sprint(wantStats) {
			t.Errorf("LookupStats = %+v\nwant %+v", st, wantStats)
		}
	})
}

// checkSourceBound: unknown keys from a cost three lookups, then are
// refused without one.
func checkSourceBound(t *testing.T, k *Keyring, p *probe, a *countingSource) {
	t.Helper()
	before := p.n("hgetall")
	for i := range 10 {
		_, err := k.VerifyFrom(ctx, unknownSecret("a", i), a)
		want := ErrInvalidKey
		if i >= 3 {
			want = ErrKeyLookupsLimited
		}
		if !errors.Is(err, want) {
			t.Fatalf("unknown key %d from a: %v, want %v", i, err, want)
		}
	}
	if n := p.n("hgetall") - before; n != 3 {
		t.Errorf("10 unknown keys from one source cost %d lookups, want 3", n)
	}
	_, err := k.VerifyFrom(ctx, unknownSecret("a", 99), a)
	var ra interface{ RetryAfter() time.Duration }
	if !errors.As(err, &ra) || ra.RetryAfter() != time.Second || invoicing.KindOf(err) != invoicing.Limited {
		t.Fatalf("over the bound: %v; want a Limited error with RetryAfter 1s (1/s, bucket empty)", err)
	}
	// Repeats of a key found unknown are the negative cache's: no token,
	// no refusal.
	if _, err := k.VerifyFrom(ctx, unknownSecret("a", 0), a); !errors.Is(err, ErrInvalidKey) {
		t.Errorf("a repeated unknown key: %v, want ErrInvalidKey", err)
	}
}

// checkKnownKeyUnbounded: the known key from a is answered from the cache, also once past
// CacheTTL (read again, not bounded), and a is never asked where it
// is.
func checkKnownKeyUnbounded(t *testing.T, k *Keyring, p *probe, c *testenv.Clock, a *countingSource, good string) {
	t.Helper()
	asked := a.asked.Load()
	c.Add(1500 * time.Millisecond) // past CacheTTL; a's bucket gets 1.5 tokens
	before := p.n("hgetall")
	for range 5 {
		if _, err := k.VerifyFrom(ctx, good, a); err != nil {
			t.Fatalf("the known key from a flooding source: %v", err)
		}
	}
	if n := p.n("hgetall") - before; n != 1 {
		t.Errorf("the known key past CacheTTL cost %d lookups, want 1", n)
	}
	if a.asked.Load() != asked {
		t.Errorf("the source was asked its address for a known key")
	}
}

// checkFoundKeysSpendNothing: keys found spend nothing; a's 1.5 tokens admit a good key never
// seen here, then one unknown, then nothing.
func checkFoundKeysSpendNothing(t *testing.T, k *Keyring, a *countingSource, fresh string) {
	t.Helper()
	if _, err := k.VerifyFrom(ctx, fresh, a); err != nil {
		t.Errorf("a good key's first use with a token left: %v", err)
	}
	if _, err := k.VerifyFrom(ctx, unknownSecret("a", 10), a); !errors.Is(err, ErrInvalidKey) {
		t.Errorf("after a found key: %v, want ErrInvalidKey (a token left)", err)
	}
	if _, err := k.VerifyFrom(ctx, unknownSecret("a", 11), a); !errors.Is(err, ErrKeyLookupsLimited) {
		t.Errorf("then: %v, want ErrKeyLookupsLimited", err)
	}
}

// checkIPv6SourcesAndInstanceBound: an IPv6 source is its /64: two addresses of one /64 share a
// bucket of 3, another /64 has its own. The instance has 7 left
// (8, refilled to its burst, less a's last), which these spend to 1.
func checkIPv6SourcesAndInstanceBound(t *testing.T, k *Keyring) {
	t.Helper()
	v6 := []Source{from("2001:db8:1:2::1"), from("2001:db8:1:2:ffff::9"), from("2001:db8:1:3::1")}
	var got []string
	for i, src := range []Source{v6[0], v6[1], v6[0], v6[1], v6[2], v6[2], v6[2]} {
		_, err := k.VerifyFrom(ctx, unknownSecret("b", i), src)
		got = append(got, map[bool]string{true: "looked up", false: "refused"}[errors.Is(err, ErrInvalidKey)])
	}
	want := []string{"looked up", "looked up", "looked up", "refused", "looked up", "looked up", "looked up"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("IPv6 sources: %v, want %v", got, want)
	}
	// The instance's last token, then its bound: new sources are
	// refused too.
	if _, err := k.VerifyFrom(ctx, unknownSecret("c", 0), from("192.0.2.1")); !errors.Is(err, ErrInvalidKey) {
		t.Errorf("the instance's last token: %v, want ErrInvalidKey", err)
	}
	var lim *limitedError
	if _, err := k.VerifyFrom(ctx, unknownSecret("c", 1), from("192.0.2.2")); !errors.As(err, &lim) || lim.which != refusedInstance {
		t.Errorf("a new source with the instance's bound spent: %v, want instance_limit", err)
	}
}

// checkVerifyWithoutSource: Verify without a source spends the unknown source's own bucket.
func checkVerifyWithoutSource(t *testing.T, k *Keyring, c *testenv.Clock) {
	t.Helper()
	for i := range 3 {
		if _, err := k.Verify(ctx, unknownSecret("d", i)); !errors.Is(err, ErrKeyLookupsLimited) {
			t.Errorf("Verify with the instance's bound spent: %v", err)
		}
	}
	c.Add(10 * time.Second)
	for i := range 4 {
		_, err := k.Verify(ctx, unknownSecret("e", i))
		if want := map[bool]error{true: ErrInvalidKey, false: ErrKeyLookupsLimited}[i < 3]; !errors.Is(err, want) {
			t.Errorf("Verify, unknown key %d after 10 s: %v, want %v", i, err, want)
		}
	}
}

// heldLookups holds every HGETALL until release is closed, so that lookups
// overlap; held counts those waiting.
type heldLookups struct {
	held    *atomic.Int64
	release chan struct{}
}

func (heldLookups) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h heldLookups) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if strings.EqualFold(cmd.Name(), "hgetall") {
			h.held.Add(1)
			<-h.release
		}
		return next(ctx, cmd)
	}
}
func (heldLookups) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// Concurrent lookups hold their places: 64 unknown keys at once from one
// source, their lookups held until every call has either been refused or
// is waiting in one, cost exactly the burst (a bucket checked only before
// and charged after would let them all through).
func TestLookupBoundConcurrent(t *testing.T) {
	t.Parallel()
	rdb, prefix := testenv.Redis(t)
	hold := heldLookups{held: new(atomic.Int64), release: make(chan struct{})}
	slow := redis.NewClient(rdb.Options())
	slow.AddHook(hold)
	p := attachProbe(t, slow)
	t.Cleanup(func() { slow.Close() })
	k := newRing(t, slow, prefix, newClock(), func(cfg *Config) {
		cfg.SourceLookups = LookupLimit{Rate: 1, Burst: 3}
		cfg.Timeout = 10 * time.Second // a busy machine must not turn held lookups into failures
	})
	var wg sync.WaitGroup
	var invalid, limited atomic.Int64
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := k.VerifyFrom(ctx, unknownSecret("f", i), from("198.51.100.7"))
			switch {
			case errors.Is(err, ErrInvalidKey):
				invalid.Add(1)
			case errors.Is(err, ErrKeyLookupsLimited):
				limited.Add(1)
			default:
				t.Errorf("unknown key %d: %v", i, err)
			}
		}()
	}
	testenv.Eventually(t, "every call refused or waiting in a lookup", func() error {
		return testenv.Want(hold.held.Load()+limited.Load(), 64, "calls held in a lookup or refused")
	})
	close(hold.release)
	wg.Wait()
	if n := p.n("hgetall"); n != 3 || invalid.Load() != 3 || limited.Load() != 61 {
		t.Errorf("64 concurrent unknown keys: %d lookups, %d invalid, %d limited; want 3, 3, 61", n, invalid.Load(), limited.Load())
	}
}

// makeLegacy turns a new key into one of the first form: its record moves
// to the digest of a secret without checksum and loses the checksum mark,
// as such keys are stored.
func makeLegacy(t *testing.T, k *Keyring, key Key, secret string) string {
	t.Helper()
	legacy := secret[:LegacySecretLength-1] + "Q"
	oldD, newD := sha256.Sum256([]byte(secret)), sha256.Sum256([]byte(legacy))
	oldRec, newRec := k.l.record(hex.EncodeToString(oldD[:])), k.l.record(hex.EncodeToString(newD[:]))
	m, err := k.rdb.HGetAll(ctx, oldRec).Result()
	if err != nil || m["checksum"] != "1" {
		t.Fatalf("record of a new key: %v %v", m, err)
	}
	delete(m, "checksum")
	if err := k.rdb.HSet(ctx, newRec, m).Err(); err != nil {
		t.Fatal(err)
	}
	k.rdb.Set(ctx, k.l.byID(key.ID), hex.EncodeToString(newD[:]), 0)
	k.rdb.Del(ctx, oldRec)
	return legacy
}

// Keys of the first form keep working (looked up like any unseen key), are
// marked so, and are counted; RefuseLegacyForm refuses them without a
// lookup. Rolling one gives a key of the current form.
func TestLegacyForm(t *testing.T) {
	t.Parallel()
	testenv.RedisBackends(t, func(t *testing.T, rdb *redis.Client, prefix string) {
		p := attachProbe(t, rdb)
		k := newRing(t, rdb, prefix, newClock(), nil)
		key, secret := mustCreate(t, k, companyA, invoicing.Live, "invoices:read")
		if key.LegacyForm {
			t.Fatal("a new key is marked of the first form")
		}
		old := makeLegacy(t, k, key, secret)
		for range 3 {
			if got, err := k.Verify(ctx, old); err != nil || got.ID != key.ID || !got.LegacyForm {
				t.Fatalf("a key of the first form: %+v, %v", got, err)
			}
		}
		if got, err := k.Get(ctx, key.ID); err != nil || !got.LegacyForm {
			t.Errorf("Get of a key of the first form: LegacyForm %v, %v", got.LegacyForm, err)
		}
		if n := k.LookupStats().LegacyVerified; n != 3 {
			t.Errorf("LegacyVerified = %d, want 3", n)
		}
		rolled, err := k.Roll(ctx, key.ID, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if _, f := parseSecret(rolled.Secret); f != formCurrent || rolled.New.LegacyForm {
			t.Errorf("the successor of a key of the first form: form %d, LegacyForm %v", f, rolled.New.LegacyForm)
		}

		strict := newRing(t, rdb, prefix, newClock(), func(cfg *Config) { cfg.RefuseLegacyForm = true })
		before := p.n("hgetall")
		if _, err := strict.Verify(ctx, old); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("RefuseLegacyForm: %v, want ErrInvalidKey", err)
		}
		if _, err := strict.Verify(ctx, rolled.Secret); err != nil {
			t.Errorf("RefuseLegacyForm, a key of the current form: %v", err)
		}
		if n := p.n("hgetall") - before; n != 1 {
			t.Errorf("RefuseLegacyForm: %d lookups, want 1 (the current key's)", n)
		}
		if n := strict.LookupStats().Refused["legacy_form"]; n != 1 {
			t.Errorf("refused legacy_form = %d, want 1", n)
		}
	})
}

// The sources tracked stay bounded, whoever sends.
func TestLookupSourcesBounded(t *testing.T) {
	t.Parallel()
	l := newLookupLimit(LookupLimit{Rate: 1, Burst: 2}, LookupLimit{Rate: -1}, 8)
	now := time.Now()
	for i := range 100 {
		t, lim := l.admit(Addr(netip.AddrFrom4([4]byte{198, 51, 100, byte(i)})), now)
		if lim != nil {
			panic(lim)
		}
		t.done(now, i%3 == 0)
	}
	if n := l.sourceCount(); n > 8 {
		t.Errorf("%d sources tracked, bound 8", n)
	}
}
