package shape

import (
	"context"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
)

// A company is in the peaks from its first flushed requests, before its
// block is summarized; and once Redis lost the recording (restarted empty),
// the instance registers its block again within a minute: the raw block
// expires, is summarized, and the company stays in the peaks.
func TestPeaksFromTheFirstFlushAndAfterARedisLoss(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb, prefix := testenv.Redis(t)
	t0 := recent()
	clk := testenv.NewClock(t0.Add(time.Minute))
	s := newStore(rdb, prefix, clk)
	var src source
	src.add(companyA, invoicing.Live, t0.Add(30*time.Second), 40)
	src.add(companyB, invoicing.Test, t0.Add(30*time.Second), 3)
	if err := s.Flush(ctx, &src); err != nil {
		t.Fatal(err)
	}
	peaks, err := s.Peaks(ctx, invoicing.Live)
	if err != nil || len(peaks) != 1 || peaks[0] != (Peak{companyA, classTop(rateClass(40))}) {
		t.Fatalf("peaks of a running block: %+v, %v", peaks, err)
	}
	// Redis loses everything of the recording.
	keys, _ := rdb.Keys(ctx, prefix+"*").Result()
	rdb.Del(ctx, keys...)
	clk.Add(2 * time.Minute)
	src.add(companyA, invoicing.Live, t0.Add(170*time.Second), 20)
	if err := s.Flush(ctx, &src); err != nil {
		t.Fatal(err)
	}
	raw := s.rawKey(companyA, invoicing.Live, blockOf(t0.Unix()))
	if ttl, _ := rdb.TTL(ctx, raw).Result(); ttl <= 0 {
		t.Errorf("the raw block written after the loss: TTL %v", ttl)
	}
	if n, _ := rdb.ZCard(ctx, s.dueKey()).Result(); n != 1 {
		t.Errorf("%d blocks due after the loss, want 1", n)
	}
	clk.Set(t0.Add(blockSeconds*time.Second + summarizeAfter + time.Second))
	if err := s.Flush(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if n, _ := rdb.ZCard(ctx, s.dueKey()).Result(); n != 0 {
		t.Errorf("%d blocks still due", n)
	}
	peaks, err = s.Peaks(ctx, invoicing.Live)
	if err != nil || len(peaks) != 1 || peaks[0] != (Peak{companyA, classTop(rateClass(20))}) {
		t.Errorf("peaks once summarized, after the loss: %+v, %v", peaks, err)
	}
}
