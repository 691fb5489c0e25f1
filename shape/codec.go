package shape

import (
	"encoding/binary"
	"errors"
	"slices"
)

// The encodings of a block's seconds, pure functions of bytes:
//   - raw: what instances add to while the block runs, 600 big-endian
//     16-bit counters (BITFIELD u16, saturating), 1,200 bytes;
//   - compact: the same seconds once the block is over, for the 48 hours
//     (a varint per count, a varint per run of idle seconds);
//   - summary: per minute, for the 30 days: the requests, the busiest
//     second and how many seconds came near it (summarize, expand).

// errCorrupt is an encoding that cannot be read.
var errCorrupt = errors.New("shape: unreadable recorded block")

// rawCounts reads a raw block (shorter when its last seconds were never
// written: they are 0).
func rawCounts(raw []byte) (*[blockSeconds]uint32, error) {
	if len(raw) > rawSize {
		return nil, errCorrupt
	}
	var c [blockSeconds]uint32
	for i := 0; 2*i+1 < len(raw); i++ {
		c[i] = uint32(binary.BigEndian.Uint16(raw[2*i:]))
	}
	return &c, nil
}

// compact encodes a block's seconds: uvarint(n<<1) for a second of n > 0
// requests, uvarint(k<<1|1) for k idle seconds; trailing idle seconds are
// left out. A busy block of small counts is half its raw size, a quiet one
// a few bytes.
func compact(c *[blockSeconds]uint32, dst []byte) []byte {
	idle := uint64(0)
	for _, n := range c {
		if n == 0 {
			idle++
			continue
		}
		if idle > 0 {
			dst = binary.AppendUvarint(dst, idle<<1|1)
			idle = 0
		}
		dst = binary.AppendUvarint(dst, uint64(n)<<1)
	}
	return dst
}

// uncompact reads what compact wrote.
func uncompact(b []byte) (*[blockSeconds]uint32, error) {
	var c [blockSeconds]uint32
	i := 0
	for len(b) > 0 {
		v, k := binary.Uvarint(b)
		if k <= 0 {
			return nil, errCorrupt
		}
		b = b[k:]
		if v&1 == 1 {
			if v>>1 > uint64(blockSeconds-i) {
				return nil, errCorrupt
			}
			i += int(v >> 1)
			continue
		}
		if i >= blockSeconds || v>>1 > maxCount {
			return nil, errCorrupt
		}
		c[i] = uint32(v >> 1)
		i++
	}
	return &c, nil
}

// A minute's summary keeps its requests (S), its busiest second (M) and how
// many of its busy seconds had at most M/4, at most M/2, less than M, and M
// requests: where the requests came in bursts and where they trickled (the
// total being exact, finer classes would change little of what a replay
// refuses). Encoded: uvarint(0) for an idle minute, uvarint(1) for a minute
// like the one before it in the same block, else uvarint(S+1), uvarint(M)
// and the four counts (0 to 60) in six bits each, three bytes.
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
	total   uint64
	max     uint32
	classes [classes]uint8
}

func summarizeMinute(secs []uint32) minute {
	var s minute
	for _, n := range secs {
		s.total += uint64(n)
		s.max = max(s.max, n)
	}
	for _, n := range secs {
		if n > 0 {
			s.classes[class(n, s.max)]++
		}
	}
	return s
}

// appendMinutes encodes a block's minute summaries.
func appendMinutes(dst []byte, c *[blockSeconds]uint32) []byte {
	var prev minute
	for m := range blockSeconds / 60 {
		s := summarizeMinute(c[60*m : 60*m+60])
		switch {
		case s.total == 0:
			dst = append(dst, 0)
		case m > 0 && s == prev:
			dst = append(dst, 1)
		default:
			dst = binary.AppendUvarint(dst, s.total+1)
			dst = binary.AppendUvarint(dst, uint64(s.max))
			c := s.classes
			dst = append(dst, c[0]<<2|c[1]>>4, c[1]<<4|c[2]>>2, c[2]<<6|c[3])
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
			if k <= 0 || mx == 0 || mx > maxCount || len(b) < k+3 {
				return ms, nil, errCorrupt
			}
			s.max, b = uint32(mx), b[k:]
			s.classes = [classes]uint8{b[0] >> 2, b[0]&3<<4 | b[1]>>4, b[1]&15<<2 | b[2]>>6, b[2] & 63}
			b = b[3:]
			if busy := int(s.classes[0]) + int(s.classes[1]) + int(s.classes[2]) + int(s.classes[3]); busy > 60 || busy == 0 {
				return ms, nil, errCorrupt
			}
			ms[m] = s
		}
	}
	return ms, b, nil
}

// expand gives a minute's seconds back from its summary: each busy second
// within its class's range, the requests shared so that they add up to
// the minute's, the busiest first (where the busy seconds of a minute
// were, the summary does not say: together at its start, a replay refuses
// at least as many of them as if they had been apart, in most cases).
func expand(s minute, dst *[60]uint32) {
	clear(dst[:])
	if s.total == 0 {
		return
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
