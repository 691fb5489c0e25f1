package usage

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/invoicing-ao/gateway/invoicing"
)

// Redis layout, under Prefix (P); dates and minutes are Luanda's:
//
//	P{<company>}:YYYY-MM-DD       hash  the company's day: LIVE:2xx, TEST:4xx,
//	                                    LIVE:limited (429s, also in 4xx)...; kept TTL
//	P{<company>}:YYYY-MM-DDTHH    hash  its minutes of that hour: "MM|LIVE:2xx"...; 49 h
//	P{all}:d:YYYY-MM-DD           zset  requests per company that day; kept TTL
//	P{all}:l:YYYY-MM-DD           zset  429s per company that day; kept TTL
//	P{all}:m:YYYY-MM-DDTHH:MM     zset  requests per company that minute; 2 h
//	P{all}:c:YYYY-MM-DDTHH:MM     hash  that minute's LIVE:2xx... over all companies; 2 h
//
// A company's keys share its hash tag; the overview's keys share {all}, so
// that the last hour's 60 minute sets can be united in one command, also on
// Redis Cluster.
const (
	minuteTTL  = 49 * time.Hour // per-minute counts: 48 hours, and the hour being written
	overallTTL = 2 * time.Hour  // the overview's per-minute sets: the last hour, and the one before
)

func minuteOf(t time.Time) int64 {
	_, off := t.In(luanda).Zone()
	return (t.Unix() + int64(off)) / 60
}

func dayOf(t time.Time) int64 { return minuteOf(t) / 1440 }

func dateOf(day int64) string { return time.Unix(day*86400, 0).UTC().Format(time.DateOnly) }

// minuteText is YYYY-MM-DDTHH:MM of a minute.
func minuteText(minute int64) string { return time.Unix(minute*60, 0).UTC().Format("2006-01-02T15:04") }

func (c *Counter) dayKey(company string, day int64) string {
	return c.prefix + "{" + company + "}:" + dateOf(day)
}

func (c *Counter) hourKey(company string, minute int64) string {
	return c.prefix + "{" + company + "}:" + minuteText(minute)[:13]
}

func (c *Counter) allKey(kind string, text string) string {
	return c.prefix + "{all}:" + kind + ":" + text
}

// field is a count's hash field: "LIVE:2xx", or "LIVE:limited" for 429s.
func field(k counter) string {
	mode := string(invoicing.Modes[k.mode])
	if k.limited {
		return mode + ":limited"
	}
	return mode + ":" + strconv.Itoa(int(k.class)) + "xx"
}

// writer queues a flush's commands, each key's expiry once.
type writer struct {
	ctx      context.Context
	pipe     redis.Pipeliner
	expiring map[string]bool
}

func (w *writer) expire(key string, ttl time.Duration) {
	if !w.expiring[key] {
		w.expiring[key] = true
		w.pipe.Expire(w.ctx, key, ttl)
	}
}

// write queues n of k in every place that counts it, and returns the
// command whose failure means the count must be kept for the next flush
// (the company's day, which the other counts are read beside).
func (c *Counter) write(w *writer, k counter, n int64) *redis.IntCmd {
	day := k.minute / 1440
	f := field(k)
	dk := c.dayKey(k.company, day)
	cmd := w.pipe.HIncrBy(w.ctx, dk, f, n)
	w.expire(dk, c.ttl)
	hk := c.hourKey(k.company, k.minute)
	w.pipe.HIncrBy(w.ctx, hk, minuteText(k.minute)[14:]+"|"+f, n)
	w.expire(hk, minuteTTL)
	date, mt := dateOf(day), minuteText(k.minute)
	ck := c.allKey("c", mt)
	w.pipe.HIncrBy(w.ctx, ck, f, n)
	w.expire(ck, overallTTL)
	// Per company: requests today and this minute, or, for a 429 (already
	// counted there as a request), the day's 429s.
	zsets := []zkey{{c.allKey("d", date), c.ttl}, {c.allKey("m", mt), overallTTL}}
	if k.limited {
		zsets = []zkey{{c.allKey("l", date), c.ttl}}
	}
	for _, z := range zsets {
		w.pipe.ZIncrBy(w.ctx, z.key, float64(n), k.company)
		w.expire(z.key, z.ttl)
	}
	return cmd
}

type zkey struct {
	key string
	ttl time.Duration
}
