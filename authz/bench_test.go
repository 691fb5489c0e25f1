package authz

import (
	"errors"
	"strings"
	"testing"

	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
)

// BenchmarkVerifyWarm is the hot path: a known key, cached, real clock (so
// a refresh from Redis happens once a second, as in production).
func BenchmarkVerifyWarm(b *testing.B) {
	rdb, _ := testenv.Miniredis(b)
	k := newRing(b, rdb, "bench:", nil, nil)
	_, secret := mustCreate(b, k, companyA, invoicing.Live, "invoices:read,clients:read")
	if _, err := k.Verify(ctx, secret); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			key, err := k.Verify(ctx, secret)
			if err != nil || key.Authorize(companyA, InvoicesRead) != nil {
				b.Fatal("verify failed")
			}
		}
	})
}

// BenchmarkVerifyWarmSerial: the same, one goroutine, for the latency of a
// single check.
func BenchmarkVerifyWarmSerial(b *testing.B) {
	rdb, _ := testenv.Miniredis(b)
	k := newRing(b, rdb, "bench:", nil, nil)
	_, secret := mustCreate(b, k, companyA, invoicing.Live, "invoices:read,clients:read")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := k.Verify(ctx, secret); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVerifyMalformed: rejected by shape, before hashing.
func BenchmarkVerifyMalformed(b *testing.B) {
	rdb, _ := testenv.Miniredis(b)
	k := newRing(b, rdb, "bench:", nil, nil)
	bad := "igw_live_" + strings.Repeat("a", secretBody-1) + "-"
	b.ReportAllocs()
	for b.Loop() {
		if _, err := k.Verify(ctx, bad); err == nil {
			b.Fatal("accepted")
		}
	}
}

// BenchmarkVerifyUnknown: well-formed but unknown, answered by the negative
// cache after the first lookup.
func BenchmarkVerifyUnknown(b *testing.B) {
	rdb, _ := testenv.Miniredis(b)
	k := newRing(b, rdb, "bench:", nil, nil)
	unknown := "igw_live_" + strings.Repeat("a", secretBody)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := k.Verify(ctx, unknown); err == nil {
			b.Fatal("accepted")
		}
	}
}

// BenchmarkVerifyOverBound: distinct unknown keys from a source over its
// bound of lookups, refused with no lookup (what a flood costs once the
// bound is spent).
func BenchmarkVerifyOverBound(b *testing.B) {
	rdb, _ := testenv.Miniredis(b)
	k := newRing(b, rdb, "bench:", nil, func(cfg *Config) { cfg.SourceLookups = LookupLimit{Rate: 1e-9, Burst: 1} })
	src := from("198.51.100.7")
	k.VerifyFrom(ctx, unknownSecret("g", 0), src) // spends the one token
	keys := make([]string, 1024)
	for i := range keys {
		keys[i] = unknownSecret("h", i)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := k.VerifyFrom(ctx, keys[i%len(keys)], src); !errors.Is(err, ErrKeyLookupsLimited) {
			b.Fatal(err)
		}
		i++
	}
}
