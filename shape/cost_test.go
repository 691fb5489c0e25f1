package shape

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
)

// What the recording costs Redis (docs/performance.md), on a redis-server of
// the benchmark's own with its default settings, so that its memory and
// command counts are the recording's alone.

// profile is one company's requests in each second of the day, by the
// second's index in the day.
type profile struct {
	name string
	at   func(rnd *rand.Rand, sec int) int
	// burst: each second's requests came within about 100 ms (two
	// sixteenths); else at random times within it.
	burst bool
}

// slotsOf are n requests' sixteenths, as the limiter counts them.
func (p profile) slotsOf(rnd *rand.Rand, sec, n int) []uint16 {
	s := make([]uint16, Slots)
	if p.burst {
		k := sec % (Slots - 1)
		s[k], s[k+1] = uint16(n/2), uint16(n-n/2)
		return s
	}
	for range n {
		s[rnd.IntN(Slots)]++
	}
	return s
}

var profiles = []profile{
	// A busy integration: requests in every second, 5 to 30.
	{"busy", func(rnd *rand.Rand, _ int) int { return 5 + rnd.IntN(26) }, false},
	// An ERP polling every 30 seconds.
	{"polling", func(_ *rand.Rand, sec int) int { return 1 - min(sec%30, 1) }, false},
	// A sync of two minutes at the top of each hour (50 to 150 a second),
	// otherwise a request a minute.
	{"bursty", func(rnd *rand.Rand, sec int) int {
		switch {
		case sec%3600 < 120:
			return 50 + rnd.IntN(101)
		case sec%60 == 0:
			return 1
		}
		return 0
	}, false},
	// A sync job's bursts: 130 requests within 100 ms every 3 seconds.
	{"sub-second bursts", func(_ *rand.Rand, sec int) int { return 130 * (1 - min(sec%3, 1)) }, true},
}

// BenchmarkRecordingMemory records a day of each profile for 25 companies
// through the write path and the summaries, then measures what each form
// takes per company (MEMORY USAGE of its keys) and Redis's used_memory
// delta, and states what a company active all the time keeps at most: three
// raw blocks (the current one, the one before until 12 minutes after its
// end), its days by the second until 49 hours after each (three days and a
// hour's worth: today's so far, the two before, and the third for the first
// hour), its minute summaries until 31 days after each day (32), and three
// days of its distribution.
func BenchmarkRecordingMemory(b *testing.B) {
	for _, p := range profiles {
		b.Run(p.name, func(b *testing.B) {
			for b.Loop() {
				recordDay(b, p, 25)
			}
		})
	}
}

func recordDay(b *testing.B, p profile, companies int) {
	ctx := context.Background()
	srv := testenv.StartRedisServer(b, 0)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer rdb.Close()
	before := usedMemory(b, rdb)
	// A whole Luanda day ending a block ago, near the real time: Redis
	// expires the records by its own clock.
	now := time.Now()
	day := dayOfBlock(blockOf(now.Unix())) - 1
	start := time.Unix(dayEnd(day-1), 0)
	clk := testenv.NewClock(start)
	s := New(Config{Redis: rdb, Now: clk.Now, Logger: quiet()})
	rnd := rand.New(rand.NewPCG(1, 2))
	ids := make([]string, companies)
	for i := range ids {
		ids[i] = fmt.Sprintf("00000000-0000-4000-8000-%012d", i)
	}
	for block := range 144 {
		var src source
		for sec := block * blockSeconds; sec < (block+1)*blockSeconds; sec++ {
			for _, id := range ids {
				if n := p.at(rnd, sec); n > 0 {
					src.addSlots(id, invoicing.Live, start.Add(time.Duration(sec)*time.Second), n, p.slotsOf(rnd, sec, n))
				}
			}
		}
		clk.Set(start.Add(time.Duration((block+1)*blockSeconds) * time.Second))
		if err := s.Flush(ctx, &src); err != nil {
			b.Fatal(err)
		}
		clk.Add(summarizeAfter + time.Second)
		if err := s.Flush(ctx, nil); err != nil {
			b.Fatal(err)
		}
	}
	kinds := map[string]int64{}
	iter := rdb.Scan(ctx, 0, "*", 1000).Iterator()
	for iter.Next(ctx) {
		n, err := rdb.MemoryUsage(ctx, iter.Val(), 0).Result()
		if err != nil {
			b.Fatal(err)
		}
		kinds[keyKind(iter.Val())] += n
	}
	per := func(kind string) float64 { return float64(kinds[kind]) / float64(companies) }
	// Raw blocks: each 12,000 bytes made whole, and Redis's own per key.
	days := func(kept time.Duration) float64 { return float64(kept+24*time.Hour) / float64(24*time.Hour) }
	steady := 3*float64(rawBlockMemory(b, rdb)) + per("g")*days(fineKept) + per("n")*days(coarseKept) + per("h")*days(dayStatsKept)
	b.ReportMetric(per("g"), "fine-B/company-day")
	b.ReportMetric(per("n"), "minutes-B/company-day")
	b.ReportMetric(per("h"), "dist-B/company-day")
	b.ReportMetric(float64(usedMemory(b, rdb)-before)/float64(companies), "used-B/company")
	b.ReportMetric(steady, "steady-B/company")
	b.ReportMetric(steady*1000/(1<<20), "MiB@1000")
	b.ReportMetric(steady*10000/(1<<20), "MiB@10000")
}

// rawBlockMemory is what one raw block takes, as made by a first count.
func rawBlockMemory(b *testing.B, rdb *redis.Client) int64 {
	ctx := context.Background()
	key := "{00000000-0000-4000-8000-000000000000}:live:s:9999999999"
	if err := rdb.Set(ctx, key, zeroBlock, fineKept).Err(); err != nil {
		b.Fatal(err)
	}
	defer rdb.Del(ctx, key)
	rdb.BitField(ctx, key, "OVERFLOW", "SAT", "INCRBY", "u16", "#599", 3)
	n, err := rdb.MemoryUsage(ctx, key, 0).Result()
	if err != nil {
		b.Fatal(err)
	}
	return n
}

// keyKind is a key's kind in the layout: s, g, n or h for a company's, all
// for the shared ones.
func keyKind(key string) string {
	if strings.Contains(key, "{all}") {
		return "all"
	}
	parts := strings.Split(key, ":")
	if len(parts) < 4 {
		return "?"
	}
	return parts[len(parts)-2]
}

func usedMemory(b *testing.B, rdb *redis.Client) int64 {
	info, err := rdb.Info(context.Background(), "memory").Result()
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "used_memory:"); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	b.Fatal("no used_memory in INFO")
	return 0
}

// BenchmarkRecordingCommands measures what an instance sends Redis, and
// what Redis spends on it, for companies each with requests in every
// second: three minutes of flushes a second apart, across a block's end and
// its summaries two minutes later (so a block's first writes and its
// summary are in, at one block in three minutes instead of one in ten:
// above their share). Per second of traffic: commands, and Redis's CPU.
func BenchmarkRecordingCommands(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			for b.Loop() {
				recordCommands(b, n)
			}
		})
	}
}

func recordCommands(b *testing.B, companies int) {
	ctx := context.Background()
	srv := testenv.StartRedisServer(b, 0)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer rdb.Close()
	ids := make([]string, companies)
	for i := range ids {
		ids[i] = fmt.Sprintf("00000000-0000-4000-8000-%012d", i)
	}
	start := time.Now().Truncate(blockSeconds * time.Second).Add(-30 * time.Second)
	clk := testenv.NewClock(start)
	s := New(Config{Redis: rdb, Now: clk.Now, Logger: quiet()})
	calls0, cpu0 := commandStats(b, rdb)
	rnd := rand.New(rand.NewPCG(3, 4))
	const seconds = 180
	for sec := range seconds {
		var src source
		for i, id := range ids {
			n := 1 + (i+sec)%20
			src.addSlots(id, invoicing.Live, start.Add(time.Duration(sec)*time.Second), n, profiles[0].slotsOf(rnd, sec, n))
		}
		clk.Set(start.Add(time.Duration(sec+1) * time.Second))
		if err := s.Flush(ctx, &src); err != nil {
			b.Fatal(err)
		}
	}
	calls, cpu := commandStats(b, rdb)
	b.ReportMetric(float64(calls-calls0)/seconds, "cmds/s")
	b.ReportMetric((cpu-cpu0)/seconds, "redis-cpu-s/s")
	if n, _ := rdb.Exists(ctx, s.fineKey(ids[0], invoicing.Live, dayOfBlock(blockOf(start.Unix())))).Result(); n != 1 {
		b.Fatal("the block that ended was not summarized")
	}
}

// commandStats is the commands Redis ran (INFO commandstats, the INFO
// itself left out) and the CPU it used, in seconds.
func commandStats(b *testing.B, rdb *redis.Client) (calls int64, cpu float64) {
	info, err := rdb.Info(context.Background(), "commandstats", "cpu").Result()
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		if rest, ok := strings.CutPrefix(line, "cmdstat_"); ok && !strings.HasPrefix(rest, "info:") {
			_, stats, _ := strings.Cut(rest, ":")
			for _, f := range strings.Split(stats, ",") {
				if v, ok := strings.CutPrefix(f, "calls="); ok {
					n, _ := strconv.ParseInt(v, 10, 64)
					calls += n
				}
			}
		}
		for _, k := range []string{"used_cpu_sys:", "used_cpu_user:"} {
			if v, ok := strings.CutPrefix(line, k); ok {
				f, _ := strconv.ParseFloat(v, 64)
				cpu += f
			}
		}
	}
	return calls, cpu
}
