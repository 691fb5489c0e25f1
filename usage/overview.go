package usage

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// MaxMinutes bounds a Minutes query: per-minute counts are kept 48 hours.
const MaxMinutes = 48 * 60

// Minute is one minute's requests: by status class for each mode, and the
// 429s apart (also in "4xx").
type Minute struct {
	Time        string           `json:"time"` // YYYY-MM-DDTHH:MM in Luanda
	Total       int64            `json:"total"`
	Live        map[string]int64 `json:"live"`
	Test        map[string]int64 `json:"test"`
	RateLimited Limited          `json:"rateLimited"`
}

// Minutes returns the company's last n minutes (1 to MaxMinutes), oldest
// first, the current one included.
func (c *Counter) Minutes(ctx context.Context, companyID string, n int) ([]Minute, error) {
	if err := checkRead(companyID, "minutes", n, MaxMinutes); err != nil {
		return nil, err
	}
	now := minuteOf(c.now())
	first := now - int64(n-1)
	pipe := c.rdb.Pipeline()
	var hours []*redis.MapStringStringCmd
	for h := first / 60; h <= now/60; h++ {
		hours = append(hours, pipe.HGetAll(ctx, c.hourKey(companyID, h*60)))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fmt.Errorf("%w: read: %w", ErrUnavailable, err)
	}
	out := make([]Minute, 0, n)
	for m := first; m <= now; m++ {
		fields := hours[m/60-first/60].Val()
		mt := minuteText(m)
		d := Minute{Time: mt}
		d.Total, d.Live, d.Test, d.RateLimited = tally(fields, mt[14:]+"|")
		out = append(out, d)
	}
	return out, nil
}

// CompanyCount is one company's requests over a period.
type CompanyCount struct {
	CompanyID   string `json:"companyId"`
	Requests    int64  `json:"requests"`
	RateLimited int64  `json:"rateLimited"` // 429s, today only
}

// Overview is the traffic of every company: who is busy today and in the
// last hour, and the last hour's minutes over all companies.
type Overview struct {
	Date           string         `json:"date"`
	ActiveToday    int64          `json:"activeToday"`    // companies with requests today
	ActiveLastHour int64          `json:"activeLastHour"` // in the last 60 minutes
	TopToday       []CompanyCount `json:"topToday"`       // by requests, busiest first
	TopLastHour    []CompanyCount `json:"topLastHour"`
	Minutes        []Minute       `json:"minutes"` // the last 60, all companies, oldest first
}

// Overview reads the overview, with the top companies (1 to 100).
func (c *Counter) Overview(ctx context.Context, top int) (Overview, error) {
	if top < 1 || top > 100 {
		return Overview{}, fmt.Errorf("usage: top must be 1 to 100")
	}
	now := minuteOf(c.now())
	date := dateOf(now / 1440)
	var b [8]byte
	_, _ = rand.Read(b[:])
	tmp := c.allKey("tmp", hex.EncodeToString(b[:]))
	mins := make([]string, 0, 60)
	for m := now - 59; m <= now; m++ {
		mins = append(mins, c.allKey("m", minuteText(m)))
	}
	pipe := c.rdb.Pipeline()
	today := pipe.ZRevRangeWithScores(ctx, c.allKey("d", date), 0, int64(top-1))
	todayN := pipe.ZCard(ctx, c.allKey("d", date))
	pipe.ZUnionStore(ctx, tmp, &redis.ZStore{Keys: mins})
	pipe.Expire(ctx, tmp, 10*time.Second) // if the DEL below is lost
	hour := pipe.ZRevRangeWithScores(ctx, tmp, 0, int64(top-1))
	hourN := pipe.ZCard(ctx, tmp)
	pipe.Del(ctx, tmp)
	classes := make([]*redis.MapStringStringCmd, 0, 60)
	for m := now - 59; m <= now; m++ {
		classes = append(classes, pipe.HGetAll(ctx, c.allKey("c", minuteText(m))))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return Overview{}, fmt.Errorf("%w: overview: %w", ErrUnavailable, err)
	}
	o := Overview{Date: date, ActiveToday: todayN.Val(), ActiveLastHour: hourN.Val(),
		TopToday: counts(today.Val()), TopLastHour: counts(hour.Val())}
	if err := c.limitedToday(ctx, date, o.TopToday); err != nil {
		return Overview{}, err
	}
	for i, cmd := range classes {
		d := Minute{Time: minuteText(now - 59 + int64(i))}
		d.Total, d.Live, d.Test, d.RateLimited = tally(cmd.Val(), "")
		o.Minutes = append(o.Minutes, d)
	}
	return o, nil
}

func counts(zs []redis.Z) []CompanyCount {
	out := make([]CompanyCount, 0, len(zs))
	for _, z := range zs {
		id, _ := z.Member.(string)
		out = append(out, CompanyCount{CompanyID: id, Requests: int64(z.Score)})
	}
	return out
}

// limitedToday fills in the 429s of each company today.
func (c *Counter) limitedToday(ctx context.Context, date string, cs []CompanyCount) error {
	if len(cs) == 0 {
		return nil
	}
	ids := make([]string, len(cs))
	for i, cc := range cs {
		ids[i] = cc.CompanyID
	}
	scores, err := c.rdb.ZMScore(ctx, c.allKey("l", date), ids...).Result()
	if err != nil {
		return fmt.Errorf("%w: overview: %w", ErrUnavailable, err)
	}
	for i := range cs {
		cs[i].RateLimited = int64(scores[i])
	}
	return nil
}
