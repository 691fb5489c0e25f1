package tenants

import (
	"context"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
	"github.com/redis/go-redis/v9"
)

// One decision against the real Redis: one round trip, the script cached.
func BenchmarkAllowRedis(b *testing.B) {
	rdb, prefix := testenv.Redis(b)
	l := New(Config{Redis: rdb, Prefix: prefix, LiveDefault: Limit{Rate: MaxRate, Burst: MaxBurst}, Logger: discard()})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := l.Allow(ctx, "acme", invoicing.Live); err != nil {
			b.Fatal(err)
		}
	}
}

// Decisions from many goroutines across 100 companies, as a busy gateway.
func BenchmarkAllowRedisParallel(b *testing.B) {
	rdb, prefix := testenv.Redis(b)
	l := New(Config{Redis: rdb, Prefix: prefix, Logger: discard()})
	companies := make([]string, 100)
	for i := range companies {
		companies[i] = "co" + strconv.Itoa(i)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			if _, err := l.Allow(context.Background(), companies[i%len(companies)], invoicing.Live); err != nil {
				b.Error(err)
				return
			}
			i++
		}
	})
}

// One decision while Redis is down and the next probe is not due.
func BenchmarkAllowFallback(b *testing.B) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	defer rdb.Close()
	l := New(Config{Redis: rdb, RetryEvery: time.Hour, Logger: discard()})
	ctx := context.Background()
	if d, _ := l.Allow(ctx, "acme", invoicing.Live); !d.Local {
		b.Fatal("not in fallback")
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := l.Allow(ctx, "acme", invoicing.Live); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGuard(b *testing.B) {
	g := NewGuard(GuardConfig{})
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			release, err := g.Acquire(ctx, "acme")
			if err != nil {
				continue // ErrBusy: more goroutines than PerCompany
			}
			release.Release()
		}
	})
}

// Decisions from leases across 10 companies, the usual case under load,
// without and with counting the requests offered (CountOffered), the counts
// taken every 10,000 decisions as the recorder takes them every second.
func BenchmarkAllowLeased(b *testing.B) {
	for _, count := range []bool{false, true} {
		name := "uncounted"
		if count {
			name = "counted"
		}
		b.Run(name, func(b *testing.B) {
			rdb, prefix := testenv.Redis(b)
			l := New(Config{Redis: rdb, Prefix: prefix, LiveDefault: Limit{Rate: MaxRate, Burst: MaxBurst}, Logger: discard(), CountOffered: count})
			companies := make([]string, 10)
			for i := range companies {
				companies[i] = "co" + strconv.Itoa(i)
			}
			ctx := context.Background()
			sum := 0
			b.ReportAllocs()
			i := 0
			cpu0 := cpuTime()
			for b.Loop() {
				if _, err := l.Allow(ctx, companies[i%len(companies)], invoicing.Live); err != nil {
					b.Fatal(err)
				}
				if i++; i%10_000 == 0 {
					l.TakeOffered(func(_ string, _ invoicing.Mode, _ int64, n, _ int, _ []uint16) { sum += n })
				}
			}
			// The machine is shared: CPU time per decision is the figure
			// other processes' load does not inflate.
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
			if count && sum == 0 && i >= 10_000 {
				b.Fatal("nothing counted")
			}
		})
	}
}

// cpuTime is the process's user and system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
