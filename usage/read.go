package usage

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/invoicing-ao/gateway/invoicing"
)

// Day is one day of a company's usage: requests by status class ("2xx",
// "4xx", ...) for each mode.
type Day struct {
	Date  string           `json:"date"` // YYYY-MM-DD in Luanda
	Total int64            `json:"total"`
	Live  map[string]int64 `json:"live"`
	Test  map[string]int64 `json:"test"`
	// RateLimited are the 429s of the day (also counted in "4xx").
	RateLimited Limited `json:"rateLimited"`
}

// Limited counts rate-limited requests (429) by mode.
type Limited struct {
	Live int64 `json:"live"`
	Test int64 `json:"test"`
}

// MaxDays bounds a Days query.
const MaxDays = 400

// Days returns the company's usage on the last n days (1 to MaxDays), oldest
// first, today included; counts of the last FlushEvery may not be there yet.
func (c *Counter) Days(ctx context.Context, companyID string, n int) ([]Day, error) {
	if err := checkRead(companyID, "days", n, MaxDays); err != nil {
		return nil, err
	}
	today := dayOf(c.now())
	pipe := c.rdb.Pipeline()
	cmds := make([]*redis.MapStringStringCmd, n)
	for i := range n {
		cmds[i] = pipe.HGetAll(ctx, c.dayKey(companyID, today-int64(n-1-i)))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, fmt.Errorf("%w: read: %w", ErrUnavailable, err)
	}
	out := make([]Day, n)
	for i, cmd := range cmds {
		d := Day{Date: dateOf(today - int64(n-1-i))}
		d.Total, d.Live, d.Test, d.RateLimited = tally(cmd.Val(), "")
		out[i] = d
	}
	return out, nil
}

// tally reads hash fields "MODE:class" (after prefix, e.g. "07|") into
// counts by class for each mode, their total and the 429s; other fields are
// ignored.
func tally(fields map[string]string, prefix string) (total int64, live, test map[string]int64, lim Limited) {
	live, test = map[string]int64{}, map[string]int64{}
	for f, v := range fields {
		rest, ok := strings.CutPrefix(f, prefix)
		mode, class, ok2 := strings.Cut(rest, ":")
		count, err := strconv.ParseInt(v, 10, 64)
		if !ok || !ok2 || err != nil {
			continue
		}
		switch {
		case class == "limited" && invoicing.Mode(mode) == invoicing.Live:
			lim.Live += count
		case class == "limited" && invoicing.Mode(mode) == invoicing.Test:
			lim.Test += count
		case invoicing.Mode(mode) == invoicing.Live:
			live[class] += count
			total += count
		case invoicing.Mode(mode) == invoicing.Test:
			test[class] += count
			total += count
		}
	}
	return total, live, test, lim
}

// checkRead checks a company's read: its id canonical, its count n of what
// in [1, most].
func checkRead(companyID, what string, n, most int) error {
	if !canonical(companyID) {
		return fmt.Errorf("usage: %w: %q", invoicing.ErrInvalidCompany, invoicing.Clip(companyID))
	}
	if n < 1 || n > most {
		return fmt.Errorf("usage: %s must be 1 to %d", what, most)
	}
	return nil
}
