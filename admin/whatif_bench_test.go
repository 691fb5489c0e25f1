package admin_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/admin"
	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
	"github.com/invoicing-ao/gateway/shape"
	"github.com/invoicing-ao/gateway/tenants"
)

// `gateway limits whatif` on a recorded day of bursty traffic of 100
// companies (the target: under a second per company): each iteration is
// one company's what-if over the last 24 hours, the smallest burst's
// search included, read from the real Redis as the command reads it.
// Each company has its own rhythm: a few to tens of requests a second in
// its working hours, quiet nights, syncs of one to five minutes at two to
// ten times its rate a few times a day, and single seconds of bursts.
func BenchmarkWhatIfRecordedDay(b *testing.B) {
	ctx := context.Background()
	rdb, prefix := testenv.Redis(b)
	now := time.Now().Truncate(10 * time.Minute)
	start := now.Add(-24 * time.Hour)
	clk := testenv.NewClock(start)
	store := shape.New(shape.Config{Redis: rdb, Prefix: prefix + "shape:", Now: clk.Now, Logger: quietLog()})
	limiter := tenants.New(tenants.Config{Redis: rdb, Prefix: prefix + "tenants:", Logger: quietLog()})
	adm := admin.New(admin.Config{Limiter: limiter, Shape: store, Now: clk.Now, Logger: quietLog()})
	rnd := rand.New(rand.NewPCG(11, 12))
	companies := make([]company, 100)
	for i := range companies {
		companies[i] = newCompany(rnd, i)
	}
	var offered int64
	for block := range 24 * 6 {
		var src recorder
		for sec := block * 600; sec < (block+1)*600; sec++ {
			at := start.Add(time.Duration(sec) * time.Second)
			for _, c := range companies {
				if n := c.at(rnd, at); n > 0 {
					src.offer(c.id, invoicing.Live, at, n)
					offered += int64(n)
				}
			}
		}
		clk.Set(start.Add(time.Duration(block+1) * 10 * time.Minute))
		if err := store.Flush(ctx, &src); err != nil {
			b.Fatal(err)
		}
	}
	// Summarized blocks are read from their day's record once their raw
	// block expires, ten minutes on: as by then, the last one aside.
	last := fmt.Sprint(now.Add(-10*time.Minute).Unix() / 600)
	iter := rdb.Scan(ctx, 0, prefix+"shape:*:s:*", 1000).Iterator()
	for iter.Next(ctx) {
		if k := iter.Val(); k[len(k)-len(last):] != last {
			rdb.Del(ctx, k)
		}
	}
	b.Logf("a day of %d requests from %d companies", offered, len(companies))
	b.ResetTimer()
	i := 0
	// The what-ifs take turns, each given back as long after as it took
	// (expensive.go): the time per what-if is twice its work, its CPU time
	// is the work (and what other processes' load does not inflate).
	var ru0 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	for b.Loop() {
		c := companies[i%len(companies)]
		v, err := adm.Limits.WhatIf(ctx, admin.WhatIfQuery{CompanyID: c.id, Mode: "LIVE", Rate: c.rate, Burst: int(2 * c.rate),
			Since: now.Add(-24 * time.Hour), MaxRefused: admin.DefaultMaxRefused})
		if err != nil || v.Offered == 0 {
			b.Fatalf("%s: %+v, %v", c.id, v, err)
		}
		i++
	}
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano())
	b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "cpu-ms/op")
}

// company is one company's synthetic traffic.
type company struct {
	id          string
	rate        float64 // its usual requests per second in working hours
	open, close int     // its working hours (UTC)
	syncs       []time.Duration
	syncFor     time.Duration
	syncTimes   float64 // the syncs' rate, times rate
}

func newCompany(rnd *rand.Rand, i int) company {
	c := company{id: fmt.Sprintf("00000000-0000-4000-8000-%012d", i), rate: float64(1 + rnd.IntN(30)),
		open: 6 + rnd.IntN(3), close: 17 + rnd.IntN(4), syncFor: time.Duration(1+rnd.IntN(5)) * time.Minute, syncTimes: float64(2 + rnd.IntN(9))}
	for range 2 + rnd.IntN(6) {
		c.syncs = append(c.syncs, time.Duration(rnd.IntN(86400))*time.Second)
	}
	return c
}

// at is how many requests the company offers in the second at.
func (c company) at(rnd *rand.Rand, at time.Time) int {
	inDay := at.Sub(at.Truncate(24 * time.Hour))
	for _, s := range c.syncs {
		if inDay >= s && inDay < s+c.syncFor {
			return int(c.rate*c.syncTimes) + rnd.IntN(int(c.rate)+1)
		}
	}
	switch h := at.UTC().Hour(); {
	case h < c.open || h >= c.close:
		return rnd.IntN(40) / 39 // a request now and then
	case rnd.IntN(500) == 0:
		return int(c.rate * 10) // a burst
	}
	return rnd.IntN(int(2*c.rate) + 1)
}
