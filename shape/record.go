package shape

import (
	"cmp"
	"context"
	"errors"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/invoicing-ao/gateway/invoicing"
)

// Writing. The counts of a flush are summed in memory per company, mode and
// second, then written in one pipeline: per company, mode and block, one
// BITFIELD that adds each second's count to its 16-bit counter, its
// refusals to theirs, and its sixteenths' counts to their 8-bit ones
// (layout.go). The first time this instance writes a block, and again each
// minute while it writes to it, the block is first made whole (SET NX of
// its zero bytes, with its TTL: Redis then never grows the string, and
// would double its allocation if it did), given its TTL if it has none
// (EXPIRE NX), and queued to be summarized (ZADD NX to the due set): a Redis
// that lost its data (restarted empty, failed over to a replica behind)
// gets the block registered again within a minute, and a block the BITFIELD
// made anew still expires. Instances add to the same counters, so a
// second's count is every instance's.

// registerEvery is how often an instance registers again a block it writes.
const registerEvery = 60 // seconds

// zeroBlock is a raw block with no request.
var zeroBlock = string(make([]byte, rawSize))

// Flush takes src's counts (src may be nil), writes every count pending in
// one pipeline, and summarizes the blocks due (rollup.go). Counts whose
// write failed are kept for the next flush; a reply lost after Redis
// applied a write can count it twice, which is preferred to losing the
// counts of every Redis hiccup.
func (s *Store) Flush(ctx context.Context, src Source) error {
	s.flushMu.Lock()
	defer s.flushMu.Unlock()
	if src != nil {
		src.TakeOffered(s.add)
	}
	return errors.Join(s.write(ctx), s.rollup(ctx))
}

// add counts n requests of the company in mode m at second sec, refused of
// them, slots in each sixteenth (nil: unknown). Called with flushMu held.
func (s *Store) add(company string, m invoicing.Mode, sec int64, n, refused int, slots []uint16) {
	if (n <= 0 && refused <= 0) || n < 0 || refused < 0 || !m.Valid() || company == "" || strings.ContainsAny(company, "{}|") {
		return
	}
	k := cell{company, m, sec}
	p, ok := s.pending[k]
	if !ok {
		if len(s.pending) >= s.max {
			s.dropped += int64(n)
			return
		}
		p = &pendingSecond{}
		s.pending[k] = p
	}
	p.n = addSat(p.n, n)
	p.refused = addSat(p.refused, refused)
	if len(slots) == Slots {
		for i, c := range slots {
			p.slots[i] = addSat(p.slots[i], int(c))
		}
	}
}

func addSat(v uint32, n int) uint32 { return uint32(min(uint64(v)+uint64(n), math.MaxUint32)) }

// offsetCount is one second's counts within its block.
type offsetCount struct {
	offset int
	p      *pendingSecond
}

// write sends the pending counts. Called with flushMu held.
func (s *Store) write(ctx context.Context) error {
	now := s.now()
	s.pruneMade(blockOf(now.Unix()))
	closed := now.Add(-addUntil).Unix() // blocks ended before this take no more counts
	groups := map[blockRef][]offsetCount{}
	late := int64(0)
	for c, p := range s.pending {
		b := blockOf(c.sec)
		if (b+1)*blockSeconds < closed {
			late += int64(p.n)
			continue
		}
		g := blockRef{c.company, c.mode, b}
		groups[g] = append(groups[g], offsetCount{int(c.sec - b*blockSeconds), p})
	}
	dropped := s.dropped
	s.pending, s.dropped = make(map[cell]*pendingSecond, len(s.pending)), 0
	if dropped > 0 || late > 0 {
		s.log.Warn("shape: requests not recorded", "overflow", dropped, "late", late)
	}
	if len(groups) == 0 {
		return nil
	}
	pipe := s.rdb.Pipeline()
	cmds := make([]blockWrite, 0, len(groups))
	for g, ocs := range groups {
		cmds = append(cmds, s.queueWrite(ctx, pipe, g, ocs, now.Unix()))
	}
	_, _ = pipe.Exec(ctx) // each command carries its own error
	var err error
	for _, c := range cmds {
		if e := c.add.Err(); e != nil {
			err = cmp.Or(err, e)
			for _, oc := range groups[c.g] {
				s.pending[cell{c.g.company, c.g.mode, c.g.block*blockSeconds + int64(oc.offset)}] = oc.p
			}
			continue
		}
		if c.made != nil && answered(c.made[0]) && answered(c.made[1]) && answered(c.made[2]) {
			s.made[c.g] = now.Unix()
		}
	}
	if err != nil {
		return unavailable("write", err)
	}
	return nil
}

// blockWrite is one block's commands in a flush.
type blockWrite struct {
	g    blockRef
	made []redis.Cmder // its SET NX, EXPIRE NX and ZADD NX, on its first write by this instance and each minute
	add  redis.Cmder
}

// answered: the command ran (a SET NX that found the key answers nil).
func answered(c redis.Cmder) bool { return c.Err() == nil || errors.Is(c.Err(), redis.Nil) }

// queueWrite queues one block's counts on pipe.
func (s *Store) queueWrite(ctx context.Context, pipe redis.Pipeliner, g blockRef, ocs []offsetCount, now int64) (c blockWrite) {
	c.g = g
	key := s.rawKey(g.company, g.mode, g.block)
	if at, ok := s.made[g]; !ok || now-at >= registerEvery {
		due := (g.block+1)*blockSeconds + int64(summarizeAfter/time.Second)
		c.made = []redis.Cmder{
			pipe.SetArgs(ctx, key, zeroBlock, redis.SetArgs{Mode: "NX", TTL: fineKept}),
			pipe.ExpireNX(ctx, key, fineKept),
			pipe.ZAddNX(ctx, s.dueKey(), redis.Z{Score: float64(due), Member: dueMember(g.company, g.mode, g.block)}),
		}
	}
	if s.script {
		var args []any
		bitfield(ocs, func(typ string, at int, n uint32) {
			width := 2
			if typ == "u8" {
				width = 1
			}
			args = append(args, at, width, n)
		})
		c.add = addScript.Eval(ctx, pipe, []string{key}, args...)
		return c
	}
	args := make([]any, 0, 2+4*len(ocs))
	args = append(args, "OVERFLOW", "SAT")
	bitfield(ocs, func(typ string, at int, n uint32) {
		args = append(args, "INCRBY", typ, "#"+strconv.Itoa(at), n)
	})
	c.add = pipe.BitField(ctx, key, args...)
	return c
}

// bitfield tells each counter to add to in a raw block: its type (u16,
// u8), its index among the counters of that type (BITFIELD's #), and the
// count. A second's sixteenths are written only when they add up to its
// count: a source that does not know them leaves the second even.
func bitfield(ocs []offsetCount, each func(typ string, at int, n uint32)) {
	for _, oc := range ocs {
		p := oc.p
		if p.n > 0 {
			each("u16", oc.offset, min(p.n, maxCount))
		}
		if p.refused > 0 {
			each("u16", blockSeconds+oc.offset, min(p.refused, maxCount))
		}
		sum := uint32(0)
		for _, c := range p.slots {
			sum += c
		}
		if sum == 0 || sum != p.n {
			continue
		}
		for k, c := range p.slots {
			if c > 0 {
				each("u8", slotsAt+Slots*oc.offset+k, min(c, maxSlotCount))
			}
		}
	}
}

// addScript is what BITFIELD's OVERFLOW SAT INCRBY does, for a Redis
// without BITFIELD (Config.AddByScript): ARGV holds triples of a counter's
// index, its width in bytes (1 or 2) and the count to add to it.
var addScript = redis.NewScript(`
for i = 1, #ARGV, 3 do
  local w = tonumber(ARGV[i + 1])
  local o = w * tonumber(ARGV[i])
  local b = redis.call('GETRANGE', KEYS[1], o, o + w - 1)
  local v = 0
  if #b == w then
    for j = 1, w do v = v * 256 + string.byte(b, j) end
  end
  v = math.min(256 ^ w - 1, v + tonumber(ARGV[i + 2]))
  if w == 2 then
    redis.call('SETRANGE', KEYS[1], o, string.char(math.floor(v / 256), v % 256))
  else
    redis.call('SETRANGE', KEYS[1], o, string.char(v))
  end
end
return 1
`)

// pruneMade forgets the blocks that take no more counts. Called with
// flushMu held.
func (s *Store) pruneMade(block int64) {
	if block == s.madeAt {
		return
	}
	s.madeAt = block
	for g := range s.made {
		if g.block < block-1 {
			delete(s.made, g)
		}
	}
}
