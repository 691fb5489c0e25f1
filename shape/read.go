package shape

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/invoicing-ao/gateway/invoicing"
)

// ErrWindow is a window that cannot be read: empty, longer than MaxWindow,
// or starting before the oldest summary kept.
var ErrWindow = invoicing.Define(invoicing.Error{Kind: invoicing.Invalid, Code: "invalid_parameter", Title: "Invalid query parameter",
	Message: "shape: the window must be within the last 30 days"})

// Series is a company's recorded traffic in one mode: the requests it
// offered its limit in each second of a window, admitted or refused.
type Series struct {
	Start  time.Time // the first second
	Counts []uint32  // requests offered in each second from Start
	// Uneven are the seconds whose requests came unevenly within them
	// (from a burst shorter than half a second, say), by Index ascending,
	// with the requests of each sixteenth; within the others, the requests
	// came about evenly.
	Uneven []Uneven
	// Refused are the seconds in which requests were refused (by the
	// limit then in force), by Index ascending.
	Refused []Refused
	// Busy are the indexes of the seconds with requests, ascending; nil
	// where at least half are busy (read Counts then).
	Busy []int32
	// Summarized is how many of the seconds were read from the minute
	// summaries (the seconds themselves are kept at least FineWindow, until
	// 49 hours after the end of their day): their minutes' requests are
	// exact, and how they came within each minute estimated (expand).
	Summarized int
}

// Uneven is how the requests of the series' second Index came within it:
// Slots[k] in its k-th sixteenth.
type Uneven struct {
	Index int
	Slots [Slots]uint16
}

// Refused is how many requests were refused in the series' second Index.
type Refused struct {
	Index int
	N     uint32
}

// RefusedTotal is the requests refused over the series.
func (s Series) RefusedTotal() (n int64) {
	for _, r := range s.Refused {
		n += int64(r.N)
	}
	return n
}

// End is the second after the last.
func (s Series) End() time.Time { return s.Start.Add(time.Duration(len(s.Counts)) * time.Second) }

// Series reads a company's traffic in mode m from `from` until `to` (at
// most now), in whole seconds: from the second `from` is in, until the end
// of the second `to` is in, the current one included so far. The counts of
// the last FlushEvery of each running instance may not be in yet.
func (s *Store) Series(ctx context.Context, company string, m invoicing.Mode, from, to time.Time) (Series, error) {
	return s.SeriesInto(ctx, company, m, from, to, nil)
}

// SeriesInto is Series, its Counts in *into when large enough (and *into
// then the series' Counts, to be used again once the series is done with):
// a reader of many windows (the admin's what-ifs, one at a time) allocates
// a window's seconds once, not at each read.
func (s *Store) SeriesInto(ctx context.Context, company string, m invoicing.Mode, from, to time.Time, into *[]uint32) (Series, error) {
	now := s.now()
	if to.After(now) {
		to = now
	}
	from = from.Truncate(time.Second)
	if t := to.Truncate(time.Second); t.Before(to) {
		to = t.Add(time.Second)
	}
	switch {
	case !m.Valid():
		return Series{}, fmt.Errorf("shape: %w: %q", invoicing.ErrInvalidMode, m)
	case company == "" || strings.ContainsAny(company, "{}|"):
		return Series{}, fmt.Errorf("shape: %w: %q", invoicing.ErrInvalidCompany, invoicing.Clip(company))
	case !from.Before(to) || from.Before(now.Add(-MaxWindow-time.Minute)):
		return Series{}, fmt.Errorf("%w: from %s to %s", ErrWindow, from.UTC().Format(time.RFC3339), to.UTC().Format(time.RFC3339))
	}
	r := s.newReading(ctx, company, m, from.Unix(), to.Unix(), now.Unix())
	if err := r.fetch(); err != nil {
		return Series{}, err
	}
	n := int(to.Sub(from) / time.Second)
	out := Series{Start: from.UTC()}
	if into != nil && cap(*into) >= n {
		out.Counts = (*into)[:n]
		clear(out.Counts)
	} else {
		out.Counts = make([]uint32, n)
	}
	blk := new(block) // one for every block read: 14 KB, not 14 KB a block
	for b := r.first; b <= r.last; b++ {
		found, summarized, err := r.block(b, blk)
		if err != nil {
			s.log.Warn("shape: a recorded block is unreadable; it is left out", "company", company, "mode", string(m), "block", b)
			continue
		}
		if found {
			out.add(blk, b*blockSeconds-r.from, summarized)
		}
	}
	if into != nil && cap(out.Counts) > cap(*into) {
		*into = out.Counts[:0]
	}
	if 2*len(out.Busy) >= len(out.Counts) {
		out.Busy = nil // as large as Counts: read Counts
	}
	return out, nil
}

// add puts a block's seconds in the series, the block's first second at
// index `at` (negative, or past the end, for the seconds out of the
// window).
func (s *Series) add(b *block, at int64, summarized bool) {
	for i, n := range b.counts {
		j := at + int64(i)
		if j < 0 || j >= int64(len(s.Counts)) {
			continue
		}
		s.Counts[j] = n
		if n > 0 {
			s.Busy = append(s.Busy, int32(j))
		}
		if summarized {
			s.Summarized++
		}
		if b.refused[i] > 0 {
			s.Refused = append(s.Refused, Refused{Index: int(j), N: b.refused[i]})
		}
		if b.uneven[i] {
			u := Uneven{Index: int(j)}
			for k, c := range b.slots[i] {
				u.Slots[k] = uint16(c)
			}
			s.Uneven = append(s.Uneven, u)
		}
	}
}

// reading is one Series read: what it fetches, then the records found.
type reading struct {
	s                  *Store
	ctx                context.Context
	company            string
	mode               invoicing.Mode
	from, to, now      int64
	first, last        int64
	raw                map[int64]*redis.StringCmd
	fine, coarse       map[int64]*redis.StringCmd // by day
	fineRec, coarseRec map[int64]map[byte][]byte  // by day, then block of the day
}

func (s *Store) newReading(ctx context.Context, company string, m invoicing.Mode, from, to, now int64) *reading {
	return &reading{s: s, ctx: ctx, company: company, mode: m, from: from, to: to, now: now,
		first: blockOf(from), last: blockOf(to - 1),
		raw: map[int64]*redis.StringCmd{}, fine: map[int64]*redis.StringCmd{}, coarse: map[int64]*redis.StringCmd{},
		fineRec: map[int64]map[byte][]byte{}, coarseRec: map[int64]map[byte][]byte{}}
}

// fetch reads, in one pipeline, the raw blocks and the days' records by the
// second wherever they may still be kept, and the minute summaries where
// they may not.
func (r *reading) fetch() error {
	kept := r.now - int64(fineKept/time.Second) // a raw block or a day ending before this has expired
	coarseUntil := r.now - int64((FineWindow-time.Hour)/time.Second)
	pipe := r.s.rdb.Pipeline()
	for b := r.first; b <= r.last; b++ {
		end, day := (b+1)*blockSeconds, dayOfBlock(b)
		if end > kept {
			r.raw[b] = pipe.Get(r.ctx, r.s.rawKey(r.company, r.mode, b))
		}
		if dayEnd(day) > kept && r.fine[day] == nil {
			r.fine[day] = pipe.Get(r.ctx, r.s.fineKey(r.company, r.mode, day))
		}
		if b*blockSeconds < coarseUntil && r.coarse[day] == nil {
			r.coarse[day] = pipe.Get(r.ctx, r.s.coarseKey(r.company, r.mode, day))
		}
	}
	_, _ = pipe.Exec(r.ctx) // each read carries its own error
	for _, cmds := range []map[int64]*redis.StringCmd{r.raw, r.fine, r.coarse} {
		for _, cmd := range cmds {
			if err := cmd.Err(); err != nil && !errors.Is(err, redis.Nil) {
				return unavailable("read", err)
			}
		}
	}
	for day, cmd := range r.fine {
		r.fineRec[day] = records(cmd, fineRecord)
	}
	for day, cmd := range r.coarse {
		r.coarseRec[day] = records(cmd, coarseRecord)
	}
	return nil
}

// block reads one block's seconds into blk: raw while it is kept, else its
// 48-hour record, else its minute summaries (summarized); found is false
// when none is recorded.
func (r *reading) block(b int64, blk *block) (found, summarized bool, err error) {
	if cmd := r.raw[b]; cmd != nil {
		if raw, err := cmd.Bytes(); err == nil {
			return true, false, decodeRaw(raw, blk)
		}
	}
	day, bod := dayOfBlock(b), blockOfDay(b)
	if rec, ok := r.fineRec[day][bod]; ok {
		return true, false, decodeCompact(rec, blk)
	}
	if rec, ok := r.coarseRec[day][bod]; ok {
		ms, _, err := readMinutes(rec)
		if err != nil {
			return false, false, err
		}
		*blk = block{}
		for i, m := range ms {
			secs := (*[60]uint32)(blk.counts[60*i : 60*i+60])
			expand(m, secs)
			expandRefused(m, secs, (*[60]uint32)(blk.refused[60*i:60*i+60]))
		}
		return true, true, nil
	}
	return false, false, nil
}

// records splits a day's record string into its blocks' records (the last
// one of a block kept: a block summarized twice wrote the same twice).
func records(cmd *redis.StringCmd, next func([]byte) (rec, rest []byte, ok bool)) map[byte][]byte {
	b, err := cmd.Bytes()
	out := map[byte][]byte{}
	for err == nil && len(b) > 0 {
		bod := b[0]
		rec, rest, ok := next(b[1:])
		if !ok || bod >= 144 {
			break // the rest cannot be read; what was read stays
		}
		out[bod], b = rec, rest
	}
	return out
}

// fineRecord splits a 48-hour record: a uvarint length, then the compact
// seconds.
func fineRecord(b []byte) (rec, rest []byte, ok bool) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)-k) {
		return nil, nil, false
	}
	return b[k : k+int(n)], b[k+int(n):], true
}

// coarseRecord splits a 30-day record: ten minute summaries.
func coarseRecord(b []byte) (rec, rest []byte, ok bool) {
	_, rest, err := readMinutes(b)
	if err != nil {
		return nil, nil, false
	}
	return b[:len(b)-len(rest)], rest, true
}

// Peak is a company's busiest seconds in one mode: the 99th percentile of
// the seconds in which it sent requests, today and yesterday (Luanda), the
// higher of the two (a rate class's top: at most an eighth above).
type Peak struct {
	CompanyID string
	P99       uint32
}

// Peaks reads every company's Peak in mode m, the highest first, from the
// blocks summarized so far and, for the blocks not summarized yet (the
// running ones, and those that ended less than 2 minutes ago), from their
// raw seconds so far: a company is listed from its first flushed request.
func (s *Store) Peaks(ctx context.Context, m invoicing.Mode) ([]Peak, error) {
	if !m.Valid() {
		return nil, fmt.Errorf("shape: %w: %q", invoicing.ErrInvalidMode, m)
	}
	today := dayOfBlock(blockOf(s.now().Unix()))
	pipe := s.rdb.Pipeline()
	days := []*redis.ZSliceCmd{
		pipe.ZRangeWithScores(ctx, s.p99Key(m, today-1), 0, -1),
		pipe.ZRangeWithScores(ctx, s.p99Key(m, today), 0, -1),
	}
	due := pipe.ZRange(ctx, s.dueKey(), 0, -1)
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, unavailable("peaks", err)
	}
	best := map[string]uint32{}
	for _, d := range days {
		for _, z := range d.Val() {
			c, _ := z.Member.(string)
			best[c] = max(best[c], uint32(z.Score))
		}
	}
	if err := s.runningPeaks(ctx, m, today, due.Val(), best); err != nil {
		return nil, err
	}
	out := make([]Peak, 0, len(best))
	for c, p := range best {
		out = append(out, Peak{CompanyID: c, P99: p})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].P99 != out[j].P99 {
			return out[i].P99 > out[j].P99
		}
		return out[i].CompanyID < out[j].CompanyID
	})
	return out, nil
}

// runningPeaks raises best to the p99 (a rate class's top, as a day's) of
// the busy seconds of the blocks of mode m not summarized yet, of today and
// yesterday: their raw counts, a thousand blocks a round trip.
func (s *Store) runningPeaks(ctx context.Context, m invoicing.Mode, today int64, due []string, best map[string]uint32) error {
	var refs []blockRef
	for _, member := range due {
		if ref, ok := parseDue(member); ok && ref.mode == m && dayOfBlock(ref.block) >= today-1 {
			refs = append(refs, ref)
		}
	}
	busy := make([]uint32, 0, blockSeconds)
	for len(refs) > 0 {
		chunk := refs[:min(len(refs), 1000)]
		refs = refs[len(chunk):]
		pipe := s.rdb.Pipeline()
		cmds := make([]*redis.StringCmd, len(chunk))
		for i, ref := range chunk {
			cmds[i] = pipe.GetRange(ctx, s.rawKey(ref.company, ref.mode, ref.block), 0, 2*blockSeconds-1)
		}
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			return unavailable("peaks", err)
		}
		for i, ref := range chunk {
			raw, _ := cmds[i].Bytes()
			b, err := rawBlock(raw)
			if err != nil {
				continue
			}
			busy = busy[:0]
			for _, n := range b.counts {
				if n > 0 {
					busy = append(busy, n)
				}
			}
			if len(busy) > 0 {
				slices.Sort(busy)
				best[ref.company] = max(best[ref.company], classTop(rateClass(rank(busy, 0.99))))
			}
		}
	}
	return nil
}
