package admin

import (
	"net/netip"
	"testing"
	"time"
)

// Each source may present FailureBurst wrong tokens, then one a second;
// right tokens cost nothing; an IPv6 source counts by its /64; beyond the
// bound a refusal says how long to wait, and only the first of a run says
// it starts one.
func TestFailuresBucket(t *testing.T) {
	t.Parallel()
	f := newFailures(Limit{})
	now := time.Unix(1_700_000_000, 0)
	a, b := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")
	check := func(src netip.Addr, right bool) (bool, time.Duration, bool) {
		done, wait, starts := f.take(src, now)
		if done == nil {
			return false, wait, starts
		}
		done(right)
		return true, 0, false
	}
	for range 100 {
		if ok, _, _ := check(a, true); !ok {
			t.Fatal("a right token was throttled")
		}
	}
	for i := range FailureBurst {
		if ok, _, _ := check(a, false); !ok {
			t.Fatalf("wrong token %d throttled", i+1)
		}
	}
	ok, wait, starts := check(a, true)
	if ok || wait != time.Second || !starts {
		t.Fatalf("past the burst: checked %v, wait %v, starts %v", ok, wait, starts)
	}
	if ok, _, starts := check(a, true); ok || starts {
		t.Fatalf("still throttled: checked %v, starts %v", ok, starts)
	}
	if ok, _, _ := check(b, false); !ok {
		t.Fatal("another source is throttled")
	}
	now = now.Add(time.Second)
	if ok, _, _ := check(a, false); !ok {
		t.Fatal("a second later: still throttled")
	}
	if ok, _, _ := check(a, true); ok {
		t.Fatal("one wrong token a second: the next is throttled")
	}
	v6a, v6b := netip.MustParseAddr("2001:db8:1:2::1"), netip.MustParseAddr("2001:db8:1:2:ffff::9")
	for range FailureBurst {
		check(v6a, false)
	}
	if ok, _, _ := check(v6b, false); ok {
		t.Fatal("another address of the same /64 is not throttled")
	}
	if ok, _, _ := check(netip.MustParseAddr("::ffff:10.0.0.2"), false); !ok {
		t.Fatal("10.0.0.2 mapped is not 10.0.0.2")
	}
	var off *failures = newFailures(Limit{Rate: -1})
	for range 1000 {
		if done, _, _ := off.take(a, now); done == nil {
			t.Fatal("no bound throttled")
		}
	}
}

// Sources are forgotten beyond maxSources, full ones first: the map stays
// bounded whatever the number of addresses.
func TestFailuresBounded(t *testing.T) {
	t.Parallel()
	f := newFailures(Limit{})
	now := time.Unix(1_700_000_000, 0)
	for i := range maxSources + 500 {
		a := netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)})
		done, _, _ := f.take(a, now)
		done(false)
	}
	if n := len(f.sources); n > maxSources {
		t.Fatalf("%d sources tracked", n)
	}
}
