package shape

import (
	"bytes"
	"encoding/binary"
	"slices"
	"testing"
	"time"
)

func blockOf600(f func(i int) uint32) *block {
	var b block
	for i := range b.counts {
		b.counts[i] = f(i)
	}
	return &b
}

func TestCompact(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		counts *block
		size   int // bytes
	}{
		{"idle", blockOf600(func(int) uint32 { return 0 }), 0},
		// 1 to 31 in a byte, 32 to 60 in two.
		{"busy, small counts", blockOf600(func(i int) uint32 { return uint32(1 + i%60) }), 10 * (31 + 29*2)},
		{"busy, large counts", blockOf600(func(i int) uint32 { return 5000 + uint32(i) }), 1800},
		{"saturated", blockOf600(func(int) uint32 { return maxCount }), 1800},
		// A request every 30 s: a run of 29 idle seconds, one busy.
		{"polling", blockOf600(func(i int) uint32 { return uint32(1 - min(i%30, 1)) }), 1 + 19*2},
		{"one at the end", blockOf600(func(i int) uint32 { return uint32(i / 599) }), 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := compact(tc.counts, nil)
			if len(b) != tc.size {
				t.Errorf("%d bytes, want %d", len(b), tc.size)
			}
			got, err := uncompact(b)
			if err != nil || *got != *tc.counts {
				t.Errorf("round trip: %v, %v", err, got != nil && *got == *tc.counts)
			}
		})
	}
}

func TestUncompactRefusesWhatItCannotRead(t *testing.T) {
	t.Parallel()
	long := binary.AppendUvarint(nil, 601<<2|1)                          // more idle seconds than a block has
	over := binary.AppendUvarint(nil, (maxCount+1)<<2)                   // a count no counter holds
	past := binary.AppendUvarint(binary.AppendUvarint(nil, 600<<2|1), 4) // a count after the block
	extras := func(vs ...uint64) []byte {
		b := binary.AppendUvarint(nil, 5<<2|2)
		for _, v := range vs {
			b = binary.AppendUvarint(b, v)
		}
		return b
	}
	for _, b := range [][]byte{{0x80}, long, over, past, {3},
		extras(6, 0),    // more refused than offered
		extras(1, 1, 4), // sixteenths that do not add up to the second's count
		extras(0, 1<<16), extras(0, 3, 5, 0), extras(0)} {
		if _, err := uncompact(b); err == nil {
			t.Errorf("% x read", b)
		}
	}
	if _, err := rawBlock(make([]byte, rawSize+1)); err == nil {
		t.Error("a raw block longer than a block read")
	}
}

// Every count falls in its class's range, whatever the minute's busiest.
func TestClassRanges(t *testing.T) {
	t.Parallel()
	for m := uint32(1); m <= 700; m++ {
		for n := uint32(1); n <= m; n++ {
			lo, hi := classRange(class(n, m), m)
			if n < lo || n > hi {
				t.Fatalf("n %d, max %d: class %d is [%d, %d]", n, m, class(n, m), lo, hi)
			}
		}
	}
}

func TestSummaries(t *testing.T) {
	t.Parallel()
	burst := make([]uint32, 60) // a sync's burst, then a trickle
	for i := range burst {
		burst[i] = 5
		if i >= 20 && i < 25 {
			burst[i] = 100
		}
	}
	steady := slices.Repeat([]uint32{20}, 60)
	sparse := make([]uint32, 60)
	sparse[7], sparse[40] = 1, 1
	for _, tc := range []struct {
		name string
		secs []uint32
		want []uint32 // expanded
	}{
		{"idle", make([]uint32, 60), make([]uint32, 60)},
		{"steady", steady, steady},
		// Two runs of one: a second apart, in the middle.
		{"polling", sparse, slices.Concat(make([]uint32, 28), []uint32{1, 0, 1}, make([]uint32, 29))},
		// 100 requests for 5 s, 5 a second otherwise: the burst kept
		// whole, in the middle of the minute, the trickle around it.
		{"burst", burst, slices.Concat(slices.Repeat([]uint32{5}, 27), slices.Repeat([]uint32{100}, 5), slices.Repeat([]uint32{5}, 28))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := summarizeMinute(tc.secs, nil)
			var got [60]uint32
			expand(s, &got)
			if !slices.Equal(got[:], tc.want) {
				t.Errorf("expanded %v, want %v", got, tc.want)
			}
		})
	}
}

// What expand gives back is a minute with the summary's total, busiest
// second, classes and runs, whatever the minute.
func TestExpandKeepsTheSummary(t *testing.T) {
	t.Parallel()
	seed := uint32(1)
	for range 2000 {
		secs := make([]uint32, 60)
		for i := range secs {
			seed = seed*1664525 + 1013904223
			if seed>>28 < 6 {
				secs[i] = seed >> 20 % 300
			}
		}
		s := summarizeMinute(secs, nil)
		var got [60]uint32
		expand(s, &got)
		if back := summarizeMinute(got[:], nil); back != s {
			t.Fatalf("%v: summary %+v, expanded %v summarizes as %+v", secs, s, got, back)
		}
	}
}

func TestMinuteRecords(t *testing.T) {
	t.Parallel()
	poll := blockOf600(func(i int) uint32 { return uint32(1 - min(i%30, 1)) })
	quiet := blockOf600(func(i int) uint32 { return uint32(i / 599) })
	busy := blockOf600(func(i int) uint32 { return uint32(i * 7 % 90) })
	for _, tc := range []struct {
		name   string
		counts *block
		size   int
	}{
		// S, M, the classes' counts, the runs, no refusal: 7 bytes.
		{"polling: the first minute, then nine alike", poll, 7 + 9},
		{"one request at the end", quiet, 9 + 7},
		// S over 127, M, the counts, the runs, no refusal: 8 bytes a minute.
		{"busy", busy, 10 * 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := appendMinutes(nil, tc.counts)
			if len(b) != tc.size {
				t.Errorf("%d bytes, want %d", len(b), tc.size)
			}
			ms, rest, err := readMinutes(append(b, 0xAA))
			if err != nil || !bytes.Equal(rest, []byte{0xAA}) {
				t.Fatalf("read: %v, rest % x", err, rest)
			}
			for i, m := range ms {
				if want := summarizeMinute(tc.counts.counts[60*i:60*i+60], nil); m != want {
					t.Errorf("minute %d: %+v, want %+v", i, m, want)
				}
			}
		})
	}
	if _, _, err := readMinutes([]byte{1}); err == nil {
		t.Error("a block starting with a repeat read")
	}
}

func TestRateClasses(t *testing.T) {
	t.Parallel()
	prev := 0
	for n := uint32(1); n <= maxCount; n++ {
		c := rateClass(n)
		if c < prev || c >= 128 {
			t.Fatalf("%d: class %d after %d", n, c, prev)
		}
		if top := classTop(c); top < n || float64(top) > float64(n)*1.125+1 {
			t.Fatalf("%d: class %d tops at %d", n, c, top)
		}
		prev = c
	}
	hist := map[string]string{"1": "90", "40": "9", "60": "1"} // class 40: 72-79 requests/s
	if got := p99(hist); got != classTop(40) {
		t.Errorf("p99 of %v: %d, want %d", hist, got, classTop(40))
	}
}

// Blocks and days are Luanda's: 23:00 UTC starts a day.
func TestDays(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 3, 10, 23, 0, 0, 0, time.UTC).Unix()
	b := blockOf(at)
	if dateText(dayOfBlock(b)) != "2026-03-11" || blockOfDay(b) != 0 {
		t.Errorf("23:00 UTC: day %s, block %d of it", dateText(dayOfBlock(b)), blockOfDay(b))
	}
	if dateText(dayOfBlock(b-1)) != "2026-03-10" || blockOfDay(b-1) != 143 {
		t.Errorf("22:50 UTC: day %s, block %d of it", dateText(dayOfBlock(b-1)), blockOfDay(b-1))
	}
	if dayEnd(dayOfBlock(b)) != at+86400 {
		t.Errorf("the day ends at %d, want %d", dayEnd(dayOfBlock(b)), at+86400)
	}
}
