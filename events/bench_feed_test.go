package events

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
)

// feedBenchEvents is how many events BenchmarkFeedPage loads into one
// company's feed: FEED_BENCH_EVENTS, or 10,000 (CI's smoke run). The
// figures of docs/performance.md are FEED_BENCH_EVENTS=1000000's.
func feedBenchEvents(b *testing.B) int {
	if v := os.Getenv("FEED_BENCH_EVENTS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1000 {
			b.Fatalf("FEED_BENCH_EVENTS=%q: want a number of events, at least 1000", v)
		}
		return n
	}
	return 10_000
}

// sampleInvoice is an invoice.paid's data as the API answers it: two
// items, a customer and its AGT transmission (about 700 bytes, a common
// invoice's size); %d makes each one's id and number its own.
const sampleInvoice = `{"id":"7c0e5a3d-1b2f-4c6d-8e9f-%012d","number":"FT 2026/%d","type":"FT","status":"PAID",` +
	`"totalAmount":1732.61,"currency":"AOA","issuedAt":"2026-03-01T09:15:02.120Z","updatedAt":"2026-03-02T10:00:00.000Z",` +
	`"dueDate":"2026-03-31","customer":{"id":"3b9a8f51-2c4d-4e6f-8a1b-2c3d4e5f6a7b","name":"Kianda Comércio Lda","nif":"5417000001"},` +
	`"items":[{"description":"Consultoria (horas)","quantity":1.5,"unitPrice":1000.00,"total":1500.00},` +
	`{"description":"Deslocação","quantity":1,"unitPrice":232.61,"total":232.61}],` +
	`"transmission":{"status":"VALID","submittedAt":"2026-03-01T09:20:00.000Z","checkedAt":"2026-03-01T09:25:00.000Z","errors":[]}}`

// loadFeed writes n events into a company's feed as the enqueue script
// records them (ids, types, bodies), one a millisecond ending now, by
// pipelines of XADD: what detection would take days to record. It returns
// Redis's used_memory before and after.
func loadFeed(b *testing.B, s *Service, rdb *redis.Client, company string, n int) (before, after int64) {
	ctx := context.Background()
	before = usedMemory(b, rdb)
	key := s.l.feed(invoicing.Live, company)
	start := time.Now().UnixMilli() - int64(n)
	for i := 0; i < n; i += 1000 {
		pipe := rdb.Pipeline()
		for j := i; j < min(i+1000, n); j++ {
			ev := Event{ID: eventID(invoicing.Live, company, InvoicePaid, strconv.Itoa(j), ""), Type: InvoicePaid, Mode: invoicing.Live,
				CompanyID: company, Time: time.UnixMilli(start + int64(j)), Data: []byte(fmt.Sprintf(sampleInvoice, j, j))}
			body, err := ev.body()
			if err != nil {
				b.Fatal(err)
			}
			pipe.XAdd(ctx, &redis.XAddArgs{Stream: key, ID: strconv.FormatInt(start+int64(j), 10) + "-0",
				Values: []any{"i", ev.ID, "t", string(ev.Type), "b", body}})
		}
		if _, err := pipe.Exec(ctx); err != nil {
			b.Fatal(err)
		}
	}
	return before, usedMemory(b, rdb)
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
	b.Fatal("no used_memory in INFO memory")
	return 0
}

// A page of 100 events, oldest first from a cursor anywhere in a feed of
// FEED_BENCH_EVENTS events (default 10,000), one request at a time: the
// p99-ms metric is the target's (under 10 ms); bytes/event is the feed's
// Redis memory per event (MEMORY USAGE of the stream), and
// used-bytes/event used_memory's growth per event.
func BenchmarkFeedPage(b *testing.B) {
	rdb, prefix := testenv.Redis(b)
	s, err := New(Config{Redis: rdb, Prefix: prefix})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	n := feedBenchEvents(b)
	before, after := loadFeed(b, s, rdb, testCompany, n)
	key := s.l.feed(invoicing.Live, testCompany)
	usage, err := rdb.MemoryUsage(ctx, key, 0).Result()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { rdb.Del(context.Background(), key) })
	first, err := rdb.XRangeN(ctx, key, "-", "+", 1).Result()
	if err != nil || len(first) == 0 {
		b.Fatal(err)
	}
	base, _ := parsePosition(first[0].ID)
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		after := invoicing.FeedPosition{Ms: base.Ms + uint64(rand.IntN(n-100))}
		t0 := time.Now()
		p, err := s.ReadFeed(ctx, invoicing.FeedQuery{CompanyID: testCompany, Mode: invoicing.Live, After: &after, Limit: 100})
		lat = append(lat, time.Since(t0))
		if err != nil || len(p.Events) != 100 {
			b.Fatalf("a page: %d events, %v", len(p.Events), err)
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(usage)/float64(n), "bytes/event")
	b.ReportMetric(float64(after-before)/float64(n), "used-bytes/event")
	b.ReportMetric(float64(n), "events")
}
