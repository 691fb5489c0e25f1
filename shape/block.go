package shape

import (
	"encoding/binary"
	"math"
)

// A block's seconds as instances write them (raw) and as the 48 hours keep
// them (compact): the counts, the refusals, and the sixteenths of the
// seconds whose requests came unevenly (the encodings: codec.go).

// block is a block's seconds: the requests offered in each, those refused,
// and, where uneven[i], how many came in each sixteenth of second i.
type block struct {
	counts  [blockSeconds]uint32
	refused [blockSeconds]uint32
	slots   [blockSeconds][Slots]uint8
	uneven  [blockSeconds]bool
}

// rawBlock reads a raw block (shorter when its last counters were never
// written: they are 0). A second's sixteenths are kept where they came
// unevenly (isUneven), add up to its count and none saturated.
func rawBlock(raw []byte) (*block, error) {
	var b block
	if err := decodeRaw(raw, &b); err != nil {
		return nil, err
	}
	return &b, nil
}

// decodeRaw is rawBlock into b, which it overwrites: a read of many blocks
// reuses one.
func decodeRaw(raw []byte, b *block) error {
	if len(raw) > rawSize {
		return errCorrupt
	}
	*b = block{}
	u16 := func(i int) uint32 {
		if 2*i+1 < len(raw) {
			return uint32(binary.BigEndian.Uint16(raw[2*i:]))
		}
		return 0
	}
	for i := range blockSeconds {
		b.counts[i], b.refused[i] = u16(i), u16(blockSeconds+i)
		at := slotsAt + Slots*i
		if b.counts[i] == 0 || at+Slots > len(raw) {
			continue
		}
		sum, saturated := uint32(0), false
		for k := range Slots {
			c := raw[at+k]
			b.slots[i][k] = c
			sum += uint32(c)
			saturated = saturated || c == maxSlotCount
		}
		b.uneven[i] = sum == b.counts[i] && !saturated && isUneven(&b.slots[i], sum)
		if !b.uneven[i] {
			b.slots[i] = [Slots]uint8{}
		}
	}
	return nil
}

// isUneven: the requests of a second (n, in its sixteenths) came far from
// evenly: by some sixteenth, more than 2·√n + 2 more or fewer had come than
// an even spread would have brought. Requests at random times (Poisson's)
// stay under it in all but about one second in a thousand, at any rate; a
// burst of 40 within half a second is over it. A second left even costs a
// byte or two; one kept, 3 bytes and a byte per busy sixteenth more.
func isUneven(slots *[Slots]uint8, n uint32) bool {
	limit := 2*math.Sqrt(float64(n)) + 2
	cum := 0.0
	for k, c := range slots {
		cum += float64(c)
		if d := cum - float64(n)*float64(k+1)/Slots; d > limit || -d > limit {
			return true
		}
	}
	return false
}

// compact encodes a block's seconds: uvarint(k<<2|1) for k idle seconds,
// uvarint(n<<2) for a second of n > 0 requests, all admitted and even,
// else uvarint(n<<2|2), uvarint(refused), uvarint(mask) of its busy
// sixteenths (0: even), and a uvarint per busy sixteenth; trailing idle
// seconds are left out. A busy block of small even counts is half its raw
// counts' size, a quiet one a few bytes.
func compact(b *block, dst []byte) []byte {
	idle := uint64(0)
	for i, n := range b.counts {
		if n == 0 {
			idle++
			continue
		}
		if idle > 0 {
			dst = binary.AppendUvarint(dst, idle<<2|1)
			idle = 0
		}
		if b.refused[i] == 0 && !b.uneven[i] {
			dst = binary.AppendUvarint(dst, uint64(n)<<2)
			continue
		}
		dst = binary.AppendUvarint(dst, uint64(n)<<2|2)
		dst = binary.AppendUvarint(dst, uint64(min(b.refused[i], n)))
		mask := uint64(0)
		if b.uneven[i] {
			for k, c := range b.slots[i] {
				if c > 0 {
					mask |= 1 << k
				}
			}
		}
		dst = binary.AppendUvarint(dst, mask)
		for k, c := range b.slots[i] {
			if mask&(1<<k) != 0 {
				dst = binary.AppendUvarint(dst, uint64(c))
			}
		}
	}
	return dst
}

// uncompact reads what compact wrote.
func uncompact(in []byte) (*block, error) {
	var b block
	if err := decodeCompact(in, &b); err != nil {
		return nil, err
	}
	return &b, nil
}

// decodeCompact is uncompact into b, which it overwrites.
func decodeCompact(in []byte, b *block) error {
	*b = block{}
	i := 0
	next := func() (uint64, bool) {
		v, k := binary.Uvarint(in)
		if k <= 0 {
			return 0, false
		}
		in = in[k:]
		return v, true
	}
	for len(in) > 0 {
		v, ok := next()
		if !ok {
			return errCorrupt
		}
		switch v & 3 {
		case 1:
			if v>>2 > uint64(blockSeconds-i) {
				return errCorrupt
			}
			i += int(v >> 2)
			continue
		case 3:
			return errCorrupt
		}
		if i >= blockSeconds || v>>2 > maxCount || v>>2 == 0 {
			return errCorrupt
		}
		b.counts[i] = uint32(v >> 2)
		if v&2 != 0 {
			if err := b.readExtras(i, next); err != nil {
				return err
			}
		}
		i++
	}
	return nil
}

// readExtras reads second i's refusals and sixteenths.
func (b *block) readExtras(i int, next func() (uint64, bool)) error {
	refused, ok1 := next()
	mask, ok2 := next()
	if !ok1 || !ok2 || refused > uint64(b.counts[i]) || mask >= 1<<Slots {
		return errCorrupt
	}
	b.refused[i] = uint32(refused)
	if mask == 0 {
		return nil
	}
	sum := uint64(0)
	for k := range Slots {
		if mask&(1<<k) == 0 {
			continue
		}
		c, ok := next()
		if !ok || c == 0 || c > maxSlotCount {
			return errCorrupt
		}
		b.slots[i][k] = uint8(c)
		sum += c
	}
	if sum != uint64(b.counts[i]) {
		return errCorrupt
	}
	b.uneven[i] = true
	return nil
}
