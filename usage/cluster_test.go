package usage

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/internal/testenv"
)

// TestCountsOnRedisCluster flushes counts of many companies and days in one
// pipeline and reads them back on a real three-master Redis Cluster, where
// go-redis must split the pipeline by slot.
func TestCountsOnRedisCluster(t *testing.T) {
	t.Parallel()
	rdb := testenv.RedisClusterClient(t)
	ctx := context.Background()
	now := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	c := New(Config{Redis: rdb, Prefix: "gw:usage:", FlushEvery: time.Hour, Now: clock, Logger: quiet()})
	defer c.Close(ctx)
	companies := make([]string, 12)
	for i := range companies {
		companies[i] = fmt.Sprintf("00000000-0000-4000-8000-%012d", i)
		for j := 0; j <= i; j++ {
			c.Add(companies[i], "LIVE", 200)
		}
		c.Add(companies[i], "TEST", 429)
	}
	if err := c.Flush(ctx); err != nil {
		t.Fatalf("flush on the cluster: %v", err)
	}
	now = now.Add(24 * time.Hour) // a second day, for a multi-day read
	c.Add(companies[0], "LIVE", 500)
	if err := c.Flush(ctx); err != nil {
		t.Fatalf("flush on the cluster: %v", err)
	}
	for i, co := range companies {
		days, err := c.Days(ctx, co, 2)
		if err != nil {
			t.Fatalf("days on the cluster: %v", err)
		}
		if days[0].Live["2xx"] != int64(i+1) || days[0].Test["4xx"] != 1 {
			t.Errorf("company %d, first day: %+v", i, days[0])
		}
		second := int64(0)
		if i == 0 {
			second = days[1].Live["5xx"]
		}
		if days[1].Total != second || (i == 0 && second != 1) {
			t.Errorf("company %d, second day: %+v", i, days[1])
		}
	}
	// The overview unites minute sets of one slot ({all}); per-minute reads
	// stay in the company's slot.
	o, err := c.Overview(ctx, 3)
	if err != nil {
		t.Fatalf("overview on the cluster: %v", err)
	}
	if o.ActiveLastHour != 1 || len(o.TopLastHour) != 1 || o.TopLastHour[0].CompanyID != companies[0] {
		t.Errorf("overview on the cluster: %+v", o)
	}
	if ms, err := c.Minutes(ctx, companies[0], 90); err != nil || ms[len(ms)-1].Live["5xx"] != 1 {
		t.Errorf("minutes on the cluster: %v", err)
	}
}
