package shape

import (
	"encoding/binary"
	"slices"
	"testing"
)

// rawOf is a raw block as instances write it: counts, refusals and
// sixteenths at their counters.
func rawOf(counts, refused map[int]uint16, slots map[int][Slots]uint8) []byte {
	raw := make([]byte, rawSize)
	for i, n := range counts {
		binary.BigEndian.PutUint16(raw[2*i:], n)
	}
	for i, n := range refused {
		binary.BigEndian.PutUint16(raw[2*(blockSeconds+i):], n)
	}
	for i, s := range slots {
		copy(raw[slotsAt+Slots*i:], s[:])
	}
	return raw
}

// A raw block keeps the refusals of every second, and the sixteenths of
// those whose requests came unevenly, complete and unsaturated; the
// compact record keeps both, and costs an even second nothing more.
func TestRefusalsAndSixteenthsKept(t *testing.T) {
	t.Parallel()
	burst := [Slots]uint8{3: 60, 4: 70}   // 130 within about 100 ms
	even := [Slots]uint8{}                // 32 requests, two in each sixteenth
	partial := [Slots]uint8{0: 10}        // an instance that did not count its sixteenths
	full := [Slots]uint8{0: maxSlotCount} // saturated
	for k := range even {
		even[k] = 2
	}
	raw := rawOf(map[int]uint16{0: 130, 1: 32, 2: 20, 3: 300, 599: 1}, map[int]uint16{0: 25, 599: 1},
		map[int][Slots]uint8{0: burst, 1: even, 2: partial, 3: full})
	b, err := rawBlock(raw)
	if err != nil {
		t.Fatal(err)
	}
	if !b.uneven[0] || b.slots[0] != burst || b.refused[0] != 25 || b.refused[599] != 1 {
		t.Errorf("the burst's second: uneven %v, %v, %d refused", b.uneven[0], b.slots[0], b.refused[0])
	}
	for _, i := range []int{1, 2, 3, 599} {
		if b.uneven[i] || b.slots[i] != ([Slots]uint8{}) {
			t.Errorf("second %d kept its sixteenths %v", i, b.slots[i])
		}
	}
	enc := compact(b, nil)
	back, err := uncompact(enc)
	if err != nil || *back != *b {
		t.Fatalf("round trip: %v", err)
	}
	// 130: 2 bytes, its refusals, mask and two sixteenths a byte each; 32:
	// 2, 20: 1, 300: 2; 595 idle seconds: 2; the last, refused: 3.
	if want := 6 + 2 + 1 + 2 + 2 + 3; len(enc) != want {
		t.Errorf("%d bytes, want %d", len(enc), want)
	}
	// A block written before the refusals and sixteenths were: 1,200 bytes.
	old, err := rawBlock(raw[:2*blockSeconds])
	if err != nil || old.counts != b.counts || old.refused != ([blockSeconds]uint32{}) || slices.Contains(old.uneven[:], true) {
		t.Errorf("an old block: %v", err)
	}
}

// Even noise stays even; bursts shorter than half a second do not.
func TestIsUneven(t *testing.T) {
	t.Parallel()
	seed := uint32(7)
	kept := 0
	for range 1000 {
		var s [Slots]uint8
		for range 40 { // 40 requests at random times
			seed = seed*1664525 + 1013904223
			s[seed>>28]++
		}
		if isUneven(&s, 40) {
			kept++
		}
	}
	if kept > 10 {
		t.Errorf("%d of 1000 seconds of even noise kept as uneven", kept)
	}
	if half := ([Slots]uint8{0: 5, 1: 5, 2: 5, 3: 5, 4: 5, 5: 5, 6: 5, 7: 5}); !isUneven(&half, 40) {
		t.Error("40 requests in half a second left even")
	}
}

// A summarized minute keeps its refusals and the seconds they were in.
func TestMinuteRefusals(t *testing.T) {
	t.Parallel()
	b := blockOf600(func(i int) uint32 { return uint32(i % 7) })
	b.refused[3], b.refused[4], b.refused[71] = 2, 4, 1
	ms, _, err := readMinutes(appendMinutes(nil, b))
	if err != nil {
		t.Fatal(err)
	}
	if ms[0].refused != 6 || ms[0].refusedSeconds != 2 || ms[1].refused != 1 || ms[1].refusedSeconds != 1 || ms[2].refused != 0 {
		t.Fatalf("minutes %+v, %+v, %+v", ms[0], ms[1], ms[2])
	}
	var secs, refused [60]uint32
	expand(ms[0], &secs)
	expandRefused(ms[0], &secs, &refused)
	n, in := uint32(0), 0
	for i, r := range refused {
		if r > secs[i] {
			t.Errorf("second %d refuses %d of %d", i, r, secs[i])
		}
		if r > 0 {
			n += r
			in++
		}
	}
	if n != 6 || in != 2 {
		t.Errorf("expanded: %d refused in %d seconds, want 6 in 2", n, in)
	}
}
