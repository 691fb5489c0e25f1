package shape

import (
	"math"
	"slices"
	"time"
)

// Hour is the distribution of one hour's rates: of the seconds in which
// requests were offered (a company's idle seconds say nothing of the limit
// it needs), the median, the 99th percentile and the busiest.
type Hour struct {
	Start       time.Time
	Requests    int64
	BusySeconds int
	P50         uint32
	P99         uint32
	Max         uint32
}

// Hours is the series hour by hour of the clock, idle hours included; the
// first and the last may be partial.
func (s Series) Hours() []Hour {
	var out []Hour
	busy := make([]uint32, 0, 3600)
	start := s.Start.Unix()
	for i := 0; i < len(s.Counts); {
		hour := floorDiv(start+int64(i), 3600)
		end := min(len(s.Counts), int((hour+1)*3600-start))
		h := Hour{Start: time.Unix(hour*3600, 0).UTC()}
		busy = busy[:0]
		for _, n := range s.Counts[i:end] {
			if n > 0 {
				busy = append(busy, n)
				h.Requests += int64(n)
			}
		}
		if h.BusySeconds = len(busy); len(busy) > 0 {
			slices.Sort(busy)
			h.P50, h.P99, h.Max = rank(busy, 0.5), rank(busy, 0.99), busy[len(busy)-1]
		}
		out = append(out, h)
		i = end
	}
	return out
}

// rank is the nearest-rank percentile p of sorted values.
func rank(sorted []uint32, p float64) uint32 {
	return sorted[max(0, int(math.Ceil(p*float64(len(sorted))))-1)]
}
