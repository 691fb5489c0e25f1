package shape

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
)

// On a real three-master Redis Cluster: a flush of many companies is split
// by slot (each company's keys share its slot), the due set and the peaks
// live in the {all} slot, and every read stays in one slot per company.
func TestRecordOnRedisCluster(t *testing.T) {
	t.Parallel()
	rdb := testenv.RedisClusterClient(t)
	ctx := context.Background()
	t0 := recent()
	clk := testenv.NewClock(t0)
	s := newStore(rdb, "gw:shape:", clk)
	var src source
	companies := make([]string, 12)
	for i := range companies {
		companies[i] = fmt.Sprintf("00000000-0000-4000-8000-%012d", i)
		for sec := range 3 {
			src.add(companies[i], invoicing.Live, t0.Add(time.Duration(sec)*time.Second), i+sec+1)
		}
		src.add(companies[i], invoicing.Test, t0, 1)
	}
	clk.Add(5 * time.Second)
	if err := s.Flush(ctx, &src); err != nil {
		t.Fatalf("flush on the cluster: %v", err)
	}
	clk.Set(t0.Add(blockSeconds*time.Second + summarizeAfter + time.Second))
	if err := s.Flush(ctx, nil); err != nil {
		t.Fatalf("summaries on the cluster: %v", err)
	}
	for i, c := range companies {
		got, err := s.Series(ctx, c, invoicing.Live, t0, t0.Add(4*time.Second))
		if err != nil {
			t.Fatalf("series on the cluster: %v", err)
		}
		if want := []uint32{uint32(i + 1), uint32(i + 2), uint32(i + 3), 0}; fmt.Sprint(got.Counts) != fmt.Sprint(want) {
			t.Errorf("company %d: %v, want %v", i, got.Counts, want)
		}
	}
	peaks, err := s.Peaks(ctx, invoicing.Live)
	if err != nil || len(peaks) != len(companies) || peaks[0].CompanyID != companies[11] || peaks[0].P99 != 14 {
		t.Errorf("peaks on the cluster: %+v, %v", peaks, err)
	}
}
