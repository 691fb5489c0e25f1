package shape

import (
	"math/bits"
	"strconv"
	"time"

	"github.com/invoicing-ao/gateway/invoicing"
)

// Redis layout, under Prefix (P), for a company (its id is the hash tag: a
// company's keys share a slot) and a mode (live, test). Blocks are ten
// minutes of the clock (unix seconds / 600), days Luanda's:
//
//	P{<company>}:<mode>:s:<block>  string  the block's seconds while it runs, raw (codec.go):
//	                                       12,000 bytes, made whole by its first count;
//	                                       kept until 10 minutes after it is summarized
//	P{<company>}:<mode>:g:<date>   string  the day's blocks, compact, appended as each is summarized:
//	                                       [block of the day][uvarint length][compact]...;
//	                                       kept 49 hours after the day
//	P{<company>}:<mode>:n:<date>   string  the day's minutes, summarized: [block of the day][10 summaries]...;
//	                                       kept 31 days after the day
//	P{<company>}:<mode>:h:<date>   hash    the day's busy seconds by rate class: count; 2 days after the day
//	P{all}:due                     zset    blocks to summarize, "<mode>|<block>|<company>" by when (unix s)
//	P{all}:p99:<mode>:<date>       zset    each company's p99 busy second that day; 2 days after the day
//
// A block is summarized (rollup.go) two minutes after it ends, by whichever
// instance comes first; instances stop adding to it one minute after it
// ends, so that clocks a minute apart still add before it is read.
//
// The records of before refusals and sixteenths were kept (kinds f and m)
// are not read: their seconds read as idle.
const (
	blockSeconds = 600
	slotsAt      = 4 * blockSeconds // a raw block: 600 counts, 600 refusals (u16), then 600 × 16 sixteenths (u8)
	rawSize      = slotsAt + Slots*blockSeconds
	maxCount     = 1<<16 - 1 // a raw counter saturates there
	maxSlotCount = 1<<8 - 1  // and a sixteenth's there (4,080 requests a second): its second then reads as even

	addUntil       = time.Minute     // after a block's end: counts later than that are dropped
	summarizeAfter = 2 * time.Minute // after a block's end
	rawKept        = 10 * time.Minute
	fineKept       = 49 * time.Hour // after a day's end, for the 48 hours by the second
	coarseKept     = 31 * 24 * time.Hour
	dayStatsKept   = 48 * time.Hour

	// FineWindow and MaxWindow are how far back traffic is kept by the
	// second, and summarized by the minute.
	FineWindow = 48 * time.Hour
	MaxWindow  = 30 * 24 * time.Hour
)

// luandaOffset: Luanda is UTC+1 all year.
const luandaOffset = 3600

func blockOf(sec int64) int64 { return floorDiv(sec, blockSeconds) }

func dayOfBlock(block int64) int64 { return floorDiv(block*blockSeconds+luandaOffset, 86400) }

// blockOfDay is a block's index in its day, 0 to 143.
func blockOfDay(block int64) byte {
	return byte((block*blockSeconds + luandaOffset - dayOfBlock(block)*86400) / blockSeconds)
}

// dayEnd is the end of a day, unix seconds.
func dayEnd(day int64) int64 { return (day+1)*86400 - luandaOffset }

func dateText(day int64) string { return time.Unix(day*86400, 0).UTC().Format(time.DateOnly) }

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

func (s *Store) companyKey(company string, m invoicing.Mode, kind string) string {
	return s.prefix + "{" + company + "}:" + m.Lower() + ":" + kind + ":"
}

func (s *Store) rawKey(company string, m invoicing.Mode, block int64) string {
	return s.companyKey(company, m, "s") + strconv.FormatInt(block, 10)
}

func (s *Store) fineKey(company string, m invoicing.Mode, day int64) string {
	return s.companyKey(company, m, "g") + dateText(day)
}

func (s *Store) coarseKey(company string, m invoicing.Mode, day int64) string {
	return s.companyKey(company, m, "n") + dateText(day)
}

func (s *Store) dayStatsKey(company string, m invoicing.Mode, day int64) string {
	return s.companyKey(company, m, "h") + dateText(day)
}

func (s *Store) dueKey() string { return s.prefix + "{all}:due" }

func (s *Store) p99Key(m invoicing.Mode, day int64) string {
	return s.prefix + "{all}:p99:" + m.Lower() + ":" + dateText(day)
}

// dueMember names a block to summarize in the due set.
func dueMember(company string, m invoicing.Mode, block int64) string {
	return m.Lower() + "|" + strconv.FormatInt(block, 10) + "|" + company
}

// Rate classes of a busy second, for a day's distribution: 1 to 16
// requests each their own, then eight classes per doubling (each within
// 1/8 of its values), up to 65,535.
func rateClass(n uint32) int {
	if n <= 16 {
		return int(n)
	}
	e := bits.Len32(n) - 1 // 4 or more
	return 17 + (e-4)*8 + int(n>>(e-3)&7)
}

// classTop is the most requests a second of rate class c may have.
func classTop(c int) uint32 {
	if c <= 16 {
		return uint32(c)
	}
	e, sub := (c-17)/8+4, (c-17)%8
	return uint32(8+sub)<<(e-3) + 1<<(e-3) - 1
}
