package events

import (
	"crypto/sha256"
	"encoding/binary"
	"strconv"
	"time"
)

// Markers remember the ids of the events queued, for Config.Remember: far
// longer than the events themselves (Retention). Detection reads the data's
// state, so a later change of a row that says nothing new (a paid invoice
// whose customer name is corrected) finds its events again, under the same
// ids; an id remembered is not queued again.
//
// They must cost little, since they are kept for months: each is a 63-bit
// integer taken from a hash of the id, in one of markerShards sets chosen by
// 14 more of its bits (77 bits in all: among 100 million ids, the chance
// that one is taken for another is about 3 in 10^8). Redis keeps a set of
// up to set-max-intset-entries integers (512 by default) as a sorted array
// of 8 bytes each, the set's own overhead shared by its members.
//
// Expiry is by generations: the sets of one period of time (Remember/4)
// share a generation, and expire together Remember after its end, so that
// no marker needs its own expiry. A marker is looked for in every
// generation still kept (5 at most), and lives Remember to Remember + a
// period: at most 112.5 days' markers are kept at the default.
//
// Measured (Redis 7.0, used_memory) per marker, by markers in a generation:
// 2.25 million (100,000 events a day at the default): 9.9 bytes, so at most
// about 110 MB; 225,000: 19 bytes; 22,500 (1,000 events a day): 99 bytes,
// about 11 MB in all. Above 8 million in a generation (about 370,000
// events a day at the default), sets outgrow 512 members and become hash
// tables, of several times as many bytes per member (19 bytes a marker at
// 8 million, more beyond). The scripts that read and write them are in
// queue.go.

// DefaultRemember is Config.Remember's default: about three months.
const DefaultRemember = 90 * 24 * time.Hour

// markerShards is how many sets a generation's markers are spread over.
const markerShards = 1 << 14

// marker is where an event's id is remembered: the shard of its set, and
// its member (decimal, as Redis keeps an integer member compactly).
func marker(id string) (shard, member string) {
	h := sha256.Sum256([]byte(id))
	s := binary.BigEndian.Uint16(h[0:2]) % markerShards
	m := binary.BigEndian.Uint64(h[2:10]) >> 1 // 63 bits: a positive int64
	return strconv.FormatUint(uint64(s), 10), strconv.FormatUint(m, 10)
}

// generations are the markers' generations at now: the oldest still kept
// (whose markers must be looked for), the current one (where new ones go),
// and how long the current one's sets are kept from now.
func (qu *queue) generations(now time.Time) (oldest, current int64, keep time.Duration) {
	period := qu.markerPeriod().Milliseconds()
	ms := now.UnixMilli()
	current = ms / period
	oldest = (ms - qu.remember.Milliseconds()) / period
	keep = time.Duration((current+1)*period+qu.remember.Milliseconds()-ms) * time.Millisecond
	return oldest, current, keep
}

// markerPeriod is a generation's length: Remember/4, so that a lookup
// reads 5 sets at most (a page of new events pays that for each), and
// markers live at most a quarter longer than Remember.
func (qu *queue) markerPeriod() time.Duration {
	return max(qu.remember/4, time.Millisecond)
}
