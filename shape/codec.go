package shape

import (
	"encoding/binary"
	"errors"
	"slices"
)

// The encodings of a block's seconds, pure functions of bytes:
//   - raw: what instances add to while the block runs (layout.go): 600
//     big-endian 16-bit counts, 600 of refusals (BITFIELD u16, saturating),
//     and 600 × 16 8-bit counts of the seconds' sixteenths, 12,000 bytes;
//   - compact: the same seconds once the block is over, for the 48 hours
//     (a varint per count, a varint per run of idle seconds; the refusals,
//     and the sixteenths of the seconds whose requests came unevenly);
//   - summary: per minute, for the 30 days: the requests, the busiest
//     second and how many seconds came near it, the refusals (summarize,
//     expand).

// errCorrupt is an encoding that cannot be read.
var errCorrupt = errors.New("shape: unreadable recorded block")

// A minute's summary keeps its requests (S), its busiest second (M), how
// many of its busy seconds had at most M/4, at most M/2, less than M, and M
// requests (where the requests came in bursts and where they trickled: the
// total being exact, finer classes would change little of what a replay
// refuses), and in how many runs its high seconds (over M/2) came: one for
// a sync's burst, many for noise. Encoded: uvarint(0) for an idle minute,
// uvarint(1) for a minute like the one before it in the same block, else
// uvarint(S+1), uvarint(M), the four counts (0 to 60) in six bits each,
// three bytes, a byte of runs, and the refusals: uvarint(R), and when R > 0
// a byte of the seconds they were in.
const classes = 4

// class is the class of a second of n requests (1 <= n <= m) in a minute
// whose busiest second had m.
func class(n, m uint32) int {
	switch a, b := uint64(n), uint64(m); {
	case a == b:
		return 3
	case 4*a <= b:
		return 0
	case 2*a <= b:
		return 1
	}
	return 2
}

// classRange is the least and most requests a second of class k may have
// when the busiest had m.
func classRange(k int, m uint32) (lo, hi uint32) {
	bounds := [...]uint32{0, m / 4, m / 2, m - 1, m}
	lo, hi = bounds[k]+1, bounds[k+1]
	if k == 3 {
		lo = m
	}
	return lo, max(hi, lo) // an empty class's range, for unreadable summaries only
}

// minute is one minute's summary.
type minute struct {
	total          uint64
	max            uint32
	classes        [classes]uint8
	runs           uint8 // of high seconds: classes 2 and 3
	refused        uint64
	refusedSeconds uint8
}

// summarizeMinute summarizes a minute's seconds, and their refusals
// (refused: nil, or one per second).
func summarizeMinute(secs, refused []uint32) minute {
	var s minute
	for i, n := range secs {
		s.total += uint64(n)
		s.max = max(s.max, n)
		if refused != nil && refused[i] > 0 {
			s.refused += uint64(min(refused[i], n))
			s.refusedSeconds++
		}
	}
	high := false
	for _, n := range secs {
		c := -1
		if n > 0 {
			c = class(n, s.max)
			s.classes[c]++
		}
		if c >= 2 && !high {
			s.runs++
		}
		high = c >= 2
	}
	return s
}

// appendMinutes encodes a block's minute summaries.
func appendMinutes(dst []byte, b *block) []byte {
	var prev minute
	for m := range blockSeconds / 60 {
		s := summarizeMinute(b.counts[60*m:60*m+60], b.refused[60*m:60*m+60])
		switch {
		case s.total == 0:
			dst = append(dst, 0)
		case m > 0 && s == prev:
			dst = append(dst, 1)
		default:
			dst = binary.AppendUvarint(dst, s.total+1)
			dst = binary.AppendUvarint(dst, uint64(s.max))
			c := s.classes
			dst = append(dst, c[0]<<2|c[1]>>4, c[1]<<4|c[2]>>2, c[2]<<6|c[3], s.runs)
			dst = binary.AppendUvarint(dst, s.refused)
			if s.refused > 0 {
				dst = append(dst, s.refusedSeconds)
			}
		}
		prev = s
	}
	return dst
}

// readMinutes reads a block's minute summaries; rest is what follows them.
func readMinutes(b []byte) (ms [blockSeconds / 60]minute, rest []byte, err error) {
	for m := range ms {
		v, k := binary.Uvarint(b)
		if k <= 0 {
			return ms, nil, errCorrupt
		}
		b = b[k:]
		switch {
		case v == 0:
		case v == 1 && m > 0:
			ms[m] = ms[m-1]
		case v == 1:
			return ms, nil, errCorrupt
		default:
			s := minute{total: v - 1}
			mx, k := binary.Uvarint(b)
			if k <= 0 || mx == 0 || mx > maxCount || len(b) < k+4 {
				return ms, nil, errCorrupt
			}
			s.max, b = uint32(mx), b[k:]
			s.classes = [classes]uint8{b[0] >> 2, b[0]&3<<4 | b[1]>>4, b[1]&15<<2 | b[2]>>6, b[2] & 63}
			s.runs, b = b[3], b[4:]
			busy := int(s.classes[0]) + int(s.classes[1]) + int(s.classes[2]) + int(s.classes[3])
			if high := int(s.classes[2]) + int(s.classes[3]); busy > 60 || high == 0 || s.runs == 0 || int(s.runs) > high || high+int(s.runs)-1 > 60 {
				return ms, nil, errCorrupt
			}
			r, k := binary.Uvarint(b)
			if k <= 0 || r > s.total {
				return ms, nil, errCorrupt
			}
			s.refused, b = r, b[k:]
			if r > 0 {
				if len(b) == 0 || b[0] == 0 || int(b[0]) > busy || uint64(b[0]) > r {
					return ms, nil, errCorrupt
				}
				s.refusedSeconds, b = b[0], b[1:]
			}
			ms[m] = s
		}
	}
	return ms, b, nil
}

// expand gives a minute's seconds back from its summary: each busy second
// within its class's range, the requests shared so that they add up to the
// minute's, and laid out as its runs say (layout).
func expand(s minute, dst *[60]uint32) {
	var vals [60]uint32
	busy := values(s, &vals)
	layout(vals[:busy], int(s.classes[2])+int(s.classes[3]), int(s.runs), dst)
}

// layout places a minute's busy seconds (vals, busiest first, the first
// high of them in runs) over its sixty: the runs one second apart in the
// middle of the minute, each with its share of the high seconds (dealt in
// turn, so that runs are alike); the other busy seconds spread evenly
// around and between them, idle seconds in what is left. Where the runs
// were in the minute, the summary does not say: close together, a replay
// refuses about as many as where they were, or more (over bursty synthetic
// traffic, TestWhatIfFromMinuteSummaries: about a tenth more).
func layout(vals []uint32, high, runs int, dst *[60]uint32) {
	clear(dst[:])
	if len(vals) == 0 {
		return
	}
	runs = max(1, min(runs, high, 60-high+1))
	free := 60 - high - (runs - 1) // the seconds around the runs
	isHigh := [60]bool{}
	pos := free / 2
	for r := range runs {
		if r > 0 {
			pos++
		}
		size := high / runs
		if r < high%runs {
			size++
		}
		for k := range size {
			dst[pos+k] = vals[r+k*runs]
			isHigh[pos+k] = true
		}
		pos += size
	}
	var others []int
	for i := range dst {
		if !isHigh[i] {
			others = append(others, i)
		}
	}
	// The others' places, evenly spread; which goes where, dealt a golden
	// step apart, so that the busier and the quieter of them mix.
	low := vals[high:]
	step := max(1, int(float64(len(low))*0.618))
	for gcd(step, len(low)) != 1 {
		step++
	}
	for k := range low {
		dst[others[(2*k+1)*len(others)/(2*len(low))]] = low[k*step%len(low)]
	}
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// values gives the busy seconds' requests, busiest first, within their
// classes' ranges and adding up to the minute's; it returns how many.
func values(s minute, dst *[60]uint32) int {
	if s.total == 0 {
		return 0
	}
	i := 0
	var lo, room uint64
	for k := classes - 1; k >= 0; k-- {
		l, h := classRange(k, s.max)
		for range s.classes[k] {
			if i == 60 {
				break
			}
			dst[i] = l
			lo += uint64(l)
			room += uint64(h - l)
			i++
		}
	}
	busy := i
	// Share what the lower bounds leave in proportion to each second's
	// room, then one by one where room is left.
	left := min(s.total-min(s.total, lo), room)
	given := uint64(0)
	if room > 0 {
		for j := range busy {
			_, h := classRange(classOf(s, j), s.max)
			add := left * uint64(h-dst[j]) / room
			dst[j] += uint32(add)
			given += add
		}
	}
	for more := true; given < left && more; {
		more = false
		for j := 0; given < left && j < busy; j++ {
			if _, h := classRange(classOf(s, j), s.max); dst[j] < h {
				dst[j]++
				given++
				more = true
			}
		}
	}
	slices.SortFunc(dst[:busy], func(a, b uint32) int { return int(b) - int(a) })
	return busy
}

// classOf is the class of the j-th second expand lays out (the classes
// from the busiest down).
func classOf(s minute, j int) int {
	for k := classes - 1; k >= 0; k-- {
		if j < int(s.classes[k]) {
			return k
		}
		j -= int(s.classes[k])
	}
	return 0
}

// expandRefused places a minute's refusals, whose seconds (secs) expand
// gave back: over as many seconds as they were in, the busiest of them,
// each refusing at most what it offered, the first the most. Which
// seconds they were is not kept; how many, and the minute's total, are.
func expandRefused(s minute, secs, dst *[60]uint32) {
	clear(dst[:])
	if s.refused == 0 {
		return
	}
	idx := make([]int, 0, 60)
	for i, n := range secs {
		if n > 0 {
			idx = append(idx, i)
		}
	}
	slices.SortStableFunc(idx, func(a, b int) int { return int(secs[b]) - int(secs[a]) })
	idx = idx[:min(len(idx), int(s.refusedSeconds))]
	left := s.refused
	for k, i := range idx {
		share := (left + uint64(len(idx)-k) - 1) / uint64(len(idx)-k)
		n := min(share, uint64(secs[i]))
		dst[i] = uint32(n)
		left -= n
	}
}
