package backend

import (
	"fmt"
	"time"
	_ "time/tzdata" // Africa/Luanda must resolve on hosts without tzdata
)

// luanda is the platform's business time zone (UTC+1, no DST). It decides
// "today" for OVERDUE and the day boundaries of the from/to filter.
var luanda = func() *time.Location {
	if loc, err := time.LoadLocation("Africa/Luanda"); err == nil {
		return loc
	}
	return time.FixedZone("WAT", 3600)
}()

const dateLayout = "2006-01-02"

// sqliteTimeLayout is how timestamps are stored in SQLite: UTC, fixed width,
// microseconds, so that text order is time order.
const sqliteTimeLayout = "2006-01-02T15:04:05.000000Z"

// today is the current date in Luanda as YYYY-MM-DD.
func today(now time.Time) string {
	return now.In(luanda).Format(dateLayout)
}

// dayStart is 00:00 in Luanda of a YYYY-MM-DD date, as a UTC instant, so that
// date filters become range conditions on issued_at (index friendly).
func dayStart(date string) (time.Time, error) {
	d, err := time.ParseInLocation(dateLayout, date, luanda)
	if err != nil || d.Format(dateLayout) != date {
		return time.Time{}, fmt.Errorf("%w: date must be YYYY-MM-DD", ErrInvalid)
	}
	return d.UTC(), nil
}

func formatSQLiteTime(t time.Time) string {
	return t.UTC().Format(sqliteTimeLayout)
}

func parseSQLiteTime(s string) (time.Time, error) {
	t, err := time.Parse(sqliteTimeLayout, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("backend: malformed timestamp in database (%d bytes)", len(s))
	}
	return t, nil
}
