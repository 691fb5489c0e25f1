package shape

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
)

const (
	companyA = "0a5e7c1e-0000-4000-8000-00000000000a"
	companyB = "0a5e7c1e-0000-4000-8000-00000000000b"
)

// source is a Source the test fills: what an instance's limiter counted.
type source struct {
	mu     sync.Mutex
	offers []offer
}

type offer struct {
	company string
	mode    invoicing.Mode
	at      time.Time
	n       int
	slots   []uint16
}

func (s *source) add(company string, m invoicing.Mode, at time.Time, n int) {
	s.addSlots(company, m, at, n, nil)
}

// addSlots adds n requests that came in slots[k] in each sixteenth.
func (s *source) addSlots(company string, m invoicing.Mode, at time.Time, n int, slots []uint16) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.offers = append(s.offers, offer{company, m, at, n, slots})
}

func (s *source) TakeOffered(yield func(string, invoicing.Mode, int64, int, int, []uint16)) {
	s.mu.Lock()
	offers := s.offers
	s.offers = nil
	s.mu.Unlock()
	for _, o := range offers {
		yield(o.company, o.mode, o.at.Unix(), o.n, 0, o.slots)
	}
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// recent is the start of the block before the current one: the tests' clocks
// start there, near the real time, because Redis expires the keys by its
// own clock.
func recent() time.Time {
	return time.Now().Truncate(blockSeconds * time.Second).Add(-blockSeconds * time.Second)
}

func newStore(rdb redis.UniversalClient, prefix string, clk *testenv.Clock) *Store {
	return New(Config{Redis: rdb, Prefix: prefix, Now: clk.Now, Logger: quiet()})
}

func mustSeries(t *testing.T, s *Store, company string, m invoicing.Mode, from time.Time, n int) Series {
	t.Helper()
	sr, err := s.Series(context.Background(), company, m, from, from.Add(time.Duration(n)*time.Second))
	if err != nil {
		t.Fatalf("series: %v", err)
	}
	if len(sr.Counts) != n || !sr.Start.Equal(from) {
		t.Fatalf("series from %v of %d seconds, want %v and %d", sr.Start, len(sr.Counts), from, n)
	}
	return sr
}

// Two instances count the same seconds: each second reads as their sum, by
// company and mode, in the second it was offered. On the real Redis, and on
// miniredis, which has no BITFIELD (AddByScript).
func TestRecordSumsInstances(t *testing.T) {
	t.Parallel()
	testenv.RedisBackends(t, func(t *testing.T, rdb *redis.Client, prefix string) {
		_, mini := rdb.BitField(context.Background(), prefix+"probe", "GET", "u8", "0").Result()
		recordSumsInstances(t, rdb, prefix, mini != nil)
	})
}

func recordSumsInstances(t *testing.T, rdb *redis.Client, prefix string, byScript bool) {
	ctx := context.Background()
	t0 := recent()
	clk := testenv.NewClock(t0.Add(5 * time.Minute))
	newStore := func(rdb redis.UniversalClient, prefix string, clk *testenv.Clock) *Store {
		return New(Config{Redis: rdb, Prefix: prefix, Now: clk.Now, Logger: quiet(), AddByScript: byScript})
	}
	s1, s2 := newStore(rdb, prefix, clk), newStore(rdb, prefix, clk)
	var src1, src2 source
	at := t0.Add(5 * time.Minute)
	src1.add(companyA, invoicing.Live, at, 3)
	src1.add(companyA, invoicing.Live, at.Add(time.Second), 5)
	src1.add(companyA, invoicing.Live, at, 2) // a second given in two counts
	src1.add(companyA, invoicing.Test, at, 2)
	src2.add(companyA, invoicing.Live, at, 4)
	src2.add(companyA, invoicing.Live, at.Add(2*time.Second), 1)
	src2.add(companyB, invoicing.Live, at.Add(-5*time.Minute), 70_000) // a counter saturates
	clk.Add(5 * time.Second)
	for _, f := range []struct {
		s   *Store
		src *source
	}{{s1, &src1}, {s2, &src2}, {s1, &src1}} {
		if err := f.s.Flush(ctx, f.src); err != nil {
			t.Fatal(err)
		}
	}
	if got := mustSeries(t, s1, companyA, invoicing.Live, at, 4).Counts; !slices.Equal(got, []uint32{9, 5, 1, 0}) {
		t.Errorf("LIVE: %v", got)
	}
	if got := mustSeries(t, s2, companyA, invoicing.Test, at, 2).Counts; !slices.Equal(got, []uint32{2, 0}) {
		t.Errorf("TEST: %v", got)
	}
	if got := mustSeries(t, s2, companyB, invoicing.Live, t0, 2).Counts; !slices.Equal(got, []uint32{maxCount, 0}) {
		t.Errorf("saturated: %v", got)
	}
	// A block is made whole at once, and kept 49 hours until summarized.
	key := s1.rawKey(companyA, invoicing.Live, blockOf(at.Unix()))
	if n, _ := rdb.StrLen(ctx, key).Result(); n != rawSize {
		t.Errorf("raw block of %d bytes, want %d", n, rawSize)
	}
	if ttl, _ := rdb.TTL(ctx, key).Result(); ttl < fineKept-time.Minute || ttl > fineKept {
		t.Errorf("raw block TTL %v, want %v", ttl, fineKept)
	}
}

// A block two minutes past its end is summarized once: its seconds are
// then read from the day's record by the second, and once that expires
// (49 hours after the day) from its minute summaries, which keep each
// minute's requests, busiest second and busy seconds.
func TestSummarizedBlocks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb, prefix := testenv.Redis(t)
	t0 := recent()
	clk := testenv.NewClock(t0)
	s1, s2 := newStore(rdb, prefix, clk), newStore(rdb, prefix, clk)
	var src source
	want := make([]uint32, blockSeconds)
	for i := range want {
		want[i] = uint32(2 + i%3)
		if i >= 130 && i < 140 { // a burst in the third minute
			want[i] = 90
		}
	}
	for i, n := range want {
		src.add(companyA, invoicing.Live, t0.Add(time.Duration(i)*time.Second), int(n))
		if i%100 == 99 {
			clk.Set(t0.Add(time.Duration(i+1) * time.Second))
			if err := s1.Flush(ctx, &src); err != nil {
				t.Fatal(err)
			}
		}
	}
	clk.Set(t0.Add(blockSeconds*time.Second + summarizeAfter + time.Second))
	var wg sync.WaitGroup
	for _, s := range []*Store{s1, s2} { // both find it due; one summarizes it
		wg.Go(func() {
			if err := s.Flush(ctx, nil); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	block := blockOf(t0.Unix())
	raw := s1.rawKey(companyA, invoicing.Live, block)
	if ttl, _ := rdb.TTL(ctx, raw).Result(); ttl <= 0 || ttl > rawKept {
		t.Errorf("raw block TTL %v after its summary, want at most %v", ttl, rawKept)
	}
	fine, _ := rdb.Get(ctx, s1.fineKey(companyA, invoicing.Live, dayOfBlock(block))).Bytes()
	// A byte per second but the burst's (90: two bytes), after the block's
	// index and length.
	if recs := records(redis.NewStringResult(string(fine), nil), fineRecord); len(recs) != 1 || len(fine) != 1+2+blockSeconds+10 {
		t.Errorf("48-hour record: %d blocks in %d bytes, want 1 in %d", len(recs), len(fine), 1+2+blockSeconds+10)
	}
	if n, _ := rdb.ZCard(ctx, s1.dueKey()).Result(); n != 0 {
		t.Errorf("%d blocks still due", n)
	}
	rdb.Del(ctx, raw) // as ten minutes later
	if got := mustSeries(t, s2, companyA, invoicing.Live, t0, blockSeconds); !slices.Equal(got.Counts, want) || got.Summarized != 0 {
		t.Errorf("from the 48-hour record: %v (%d summarized)", got.Counts, got.Summarized)
	}
	peaks, err := s1.Peaks(ctx, invoicing.Live)
	if err != nil || len(peaks) != 1 || peaks[0] != (Peak{companyA, classTop(rateClass(90))}) {
		t.Errorf("peaks: %+v, %v; want %s at %d", peaks, err, companyA, classTop(rateClass(90)))
	}
	clk.Add(4 * 24 * time.Hour) // past 49 hours after the end of its day
	got := mustSeries(t, s2, companyA, invoicing.Live, t0, blockSeconds)
	if got.Summarized != blockSeconds {
		t.Errorf("%d of %d seconds summarized, four days later", got.Summarized, blockSeconds)
	}
	for m := range blockSeconds / 60 {
		g, w := got.Counts[60*m:60*m+60], want[60*m:60*m+60]
		if sum(g) != sum(w) || slices.Max(g) != slices.Max(w) || busy(g) != busy(w) {
			t.Errorf("minute %d: %d requests, busiest %d, %d busy seconds; want %d, %d, %d",
				m, sum(g), slices.Max(g), busy(g), sum(w), slices.Max(w), busy(w))
		}
	}
}

func sum(s []uint32) (n uint64) {
	for _, v := range s {
		n += uint64(v)
	}
	return n
}

func busy(s []uint32) (n int) {
	for _, v := range s {
		if v > 0 {
			n++
		}
	}
	return n
}

// Counts that arrive more than a minute after their block ended are
// dropped: the block may be summarized already.
func TestLateCountsAreDropped(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb, prefix := testenv.Redis(t)
	t0 := recent()
	clk := testenv.NewClock(t0.Add(blockSeconds*time.Second + addUntil + time.Second))
	s := newStore(rdb, prefix, clk)
	var src source
	src.add(companyA, invoicing.Live, t0.Add(10*time.Second), 5)                       // too late
	src.add(companyA, invoicing.Live, t0.Add(blockSeconds*time.Second+time.Second), 2) // the next block's
	if err := s.Flush(ctx, &src); err != nil {
		t.Fatal(err)
	}
	got := mustSeries(t, s, companyA, invoicing.Live, t0.Add(10*time.Second), blockSeconds-8)
	if got.Counts[0] != 0 || got.Counts[blockSeconds-9] != 2 {
		t.Errorf("late count written: %d, the next block's %d", got.Counts[0], got.Counts[blockSeconds-9])
	}
}

// While Redis cannot be reached, counts wait (at most MaxPending distinct
// seconds) and are written by the next flush that reaches it.
func TestCountsWaitForRedis(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	real, prefix := testenv.Redis(t)
	proxy := testenv.NewFaultProxy(t, real.Options().Addr)
	rdb := redis.NewClient(&redis.Options{Addr: proxy.Addr(), MaxRetries: -1, DB: real.Options().DB})
	t.Cleanup(func() { _ = rdb.Close() })
	t0 := recent().Add(blockSeconds * time.Second)
	clk := testenv.NewClock(t0.Add(time.Minute))
	s := New(Config{Redis: rdb, Prefix: prefix, MaxPending: 3, Now: clk.Now, Logger: quiet()})
	var src source
	for i := range 4 { // the fourth second is one too many
		src.add(companyA, invoicing.Live, t0.Add(time.Duration(i)*time.Second), i+1)
	}
	proxy.Cut()
	if err := s.Flush(ctx, &src); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("flush while Redis is cut: %v", err)
	}
	proxy.Resume()
	if err := s.Flush(ctx, &src); err != nil {
		t.Fatal(err)
	}
	got := mustSeries(t, s, companyA, invoicing.Live, t0, 4).Counts
	if !slices.Equal(got, []uint32{1, 2, 3, 0}) {
		t.Errorf("after Redis came back: %v, want [1 2 3 0]", got)
	}
}

func TestSeriesRefusesWhatItCannotRead(t *testing.T) {
	t.Parallel()
	rdb, prefix := testenv.Redis(t)
	clk := testenv.NewClock(recent())
	s := newStore(rdb, prefix, clk)
	now := clk.Now()
	for _, tc := range []struct {
		company  string
		mode     invoicing.Mode
		from, to time.Time
	}{
		{companyA, invoicing.Live, now, now},
		{companyA, invoicing.Live, now.Add(-MaxWindow - time.Hour), now},
		{companyA, "PROD", now.Add(-time.Hour), now},
		{"{x}", invoicing.Live, now.Add(-time.Hour), now},
	} {
		if _, err := s.Series(context.Background(), tc.company, tc.mode, tc.from, tc.to); err == nil || invoicing.KindOf(err) != invoicing.Invalid {
			t.Errorf("%+v: %v, want an Invalid error", tc, err)
		}
	}
}
