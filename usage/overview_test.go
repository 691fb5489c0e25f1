package usage

import (
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
)

func TestMinutes(t *testing.T) {
	t.Parallel()
	testenv.RedisBackends(t, func(t *testing.T, rdb *redis.Client, prefix string) {
		// 09:58:30 in Luanda: the last 3 minutes cross an hour.
		clk := testenv.NewClock(time.Date(2026, 3, 1, 8, 58, 30, 0, time.UTC))
		c := newCounter(t, rdb, prefix, clk, nil)
		c.Add(coA, invoicing.Live, 200)
		c.Add(coA, invoicing.Test, 429)
		clk.Add(time.Minute) // 09:59
		c.Add(coA, invoicing.Live, 500)
		c.Add(coB, invoicing.Live, 200) // another company's
		clk.Add(time.Minute)            // 10:00
		c.Add(coA, invoicing.Live, 201)
		c.Add(coA, invoicing.Live, 201)
		if err := c.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		ms, err := c.Minutes(ctx, coA, 4)
		if err != nil {
			t.Fatal(err)
		}
		want := []Minute{
			{Time: "2026-03-01T09:57", Live: map[string]int64{}, Test: map[string]int64{}},
			{Time: "2026-03-01T09:58", Total: 2, Live: map[string]int64{"2xx": 1}, Test: map[string]int64{"4xx": 1}, RateLimited: Limited{Test: 1}},
			{Time: "2026-03-01T09:59", Total: 1, Live: map[string]int64{"5xx": 1}, Test: map[string]int64{}},
			{Time: "2026-03-01T10:00", Total: 2, Live: map[string]int64{"2xx": 2}, Test: map[string]int64{}},
		}
		if len(ms) != len(want) {
			t.Fatalf("Minutes = %+v", ms)
		}
		for i := range want {
			m, w := ms[i], want[i]
			if m.Time != w.Time || m.Total != w.Total || !equalMap(m.Live, w.Live) || !equalMap(m.Test, w.Test) || m.RateLimited != w.RateLimited {
				t.Errorf("minute %d = %+v, want %+v", i, m, w)
			}
		}
		ttl, err := rdb.TTL(ctx, c.hourKey(coA, minuteOf(clk.Now()))).Result()
		if err != nil || ttl <= 48*time.Hour || ttl > minuteTTL {
			t.Errorf("minute hash TTL %v, %v; want about 49 h", ttl, err)
		}
		for _, n := range []int{0, MaxMinutes + 1} {
			if _, err := c.Minutes(ctx, coA, n); err == nil {
				t.Errorf("%d minutes accepted", n)
			}
		}
		if _, err := c.Minutes(ctx, "x", 1); !errors.Is(err, invoicing.ErrInvalidCompany) {
			t.Errorf("bad company: %v", err)
		}
	})
}

func TestOverview(t *testing.T) {
	t.Parallel()
	testenv.RedisBackends(t, func(t *testing.T, rdb *redis.Client, prefix string) {
		clk := testenv.NewClock(time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)) // 09:00 in Luanda
		c := newCounter(t, rdb, prefix, clk, nil)
		coC := "00000000-0000-4000-8000-00000000000c"
		// Two hours ago: C only (today, not in the last hour).
		for range 5 {
			c.Add(coC, invoicing.Live, 200)
		}
		if err := c.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		clk.Add(2 * time.Hour)
		for range 3 {
			c.Add(coA, invoicing.Live, 200)
		}
		c.Add(coA, invoicing.Live, 429)
		c.Add(coB, invoicing.Test, 200)
		c.Add(coB, invoicing.Test, 503)
		if err := c.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		o, err := c.Overview(ctx, 2)
		if err != nil {
			t.Fatal(err)
		}
		if o.Date != "2026-03-01" || o.ActiveToday != 3 || o.ActiveLastHour != 2 {
			t.Fatalf("overview %+v: want 3 companies today, 2 in the last hour", o)
		}
		wantToday := []CompanyCount{{coC, 5, 0}, {coA, 4, 1}}
		if len(o.TopToday) != 2 || o.TopToday[0] != wantToday[0] || o.TopToday[1] != wantToday[1] {
			t.Errorf("top today %+v, want %+v", o.TopToday, wantToday)
		}
		if len(o.TopLastHour) != 2 || o.TopLastHour[0].CompanyID != coA || o.TopLastHour[0].Requests != 4 ||
			o.TopLastHour[1].CompanyID != coB || o.TopLastHour[1].Requests != 2 {
			t.Errorf("top last hour %+v", o.TopLastHour)
		}
		last := o.Minutes[len(o.Minutes)-1]
		if len(o.Minutes) != 60 || last.Time != "2026-03-01T11:00" || last.Total != 6 || last.Live["2xx"] != 3 ||
			last.Live["4xx"] != 1 || last.Test["5xx"] != 1 || last.RateLimited.Live != 1 {
			t.Errorf("minutes: %d, last %+v", len(o.Minutes), last)
		}
		if n, err := rdb.Keys(ctx, prefix+"{all}:tmp:*").Result(); err != nil || len(n) != 0 {
			t.Errorf("temporary keys left: %v %v", n, err)
		}
		if _, err := c.Overview(ctx, 0); err == nil {
			t.Error("top 0 accepted")
		}
	})
}
