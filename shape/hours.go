package shape

import (
	"math"
	"slices"
	"time"
)

// Rates is the distribution of a span's per-second rates: of the seconds in
// which requests were offered (a company's idle seconds say nothing of the
// limit it needs), the median, the 99th percentile and the busiest.
type Rates struct {
	Start       time.Time `json:"start"`
	Requests    int64     `json:"requests"`
	BusySeconds int       `json:"busySeconds"`
	P50         uint32    `json:"p50"`
	P99         uint32    `json:"p99"`
	Max         uint32    `json:"max"`
}

// Rates is the distribution of the whole series.
func (s Series) Rates() Rates { return rates(s.Start, s.Counts, nil) }

// Hours is the series hour by hour of the clock, idle hours included; the
// first and the last may be partial.
func (s Series) Hours() []Rates {
	var out []Rates
	busy := make([]uint32, 0, 3600)
	start := s.Start.Unix()
	for i := 0; i < len(s.Counts); {
		hour := floorDiv(start+int64(i), 3600)
		end := min(len(s.Counts), int((hour+1)*3600-start))
		out = append(out, rates(time.Unix(hour*3600, 0).UTC(), s.Counts[i:end], busy))
		i = end
	}
	return out
}

// rates is the distribution of counts, starting at start; busy is room
// for the busy seconds (nil: made).
func rates(start time.Time, counts []uint32, busy []uint32) Rates {
	r := Rates{Start: start}
	busy = busy[:0]
	for _, n := range counts {
		if n > 0 {
			busy = append(busy, n)
			r.Requests += int64(n)
		}
	}
	if r.BusySeconds = len(busy); len(busy) > 0 {
		slices.Sort(busy)
		r.P50, r.P99, r.Max = rank(busy, 0.5), rank(busy, 0.99), busy[len(busy)-1]
	}
	return r
}

// rank is the nearest-rank percentile p of sorted values.
func rank(sorted []uint32, p float64) uint32 {
	return sorted[max(0, int(math.Ceil(p*float64(len(sorted))))-1)]
}
