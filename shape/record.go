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
// BITFIELD that adds each second's count to its 16-bit counter. The first
// time this instance writes a block, the block is first made whole (SET NX
// of 1,200 zero bytes, with its TTL: Redis then never grows the string, and
// would double its allocation if it did) and queued to be summarized (ZADD
// NX to the due set). Instances add to the same counters, so a second's
// count is every instance's.

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

// add counts n requests of the company in mode m at second sec. Called with
// flushMu held.
func (s *Store) add(company string, m invoicing.Mode, sec int64, n int) {
	if n <= 0 || !m.Valid() || company == "" || strings.ContainsAny(company, "{}|") {
		return
	}
	k := cell{company, m, sec}
	v, ok := s.pending[k]
	if !ok && len(s.pending) >= s.max {
		s.dropped += int64(n)
		return
	}
	s.pending[k] = uint32(min(uint64(v)+uint64(n), math.MaxUint32))
}

// offsetCount is one second's count within its block.
type offsetCount struct {
	offset int
	n      uint32
}

// write sends the pending counts. Called with flushMu held.
func (s *Store) write(ctx context.Context) error {
	now := s.now()
	s.pruneMade(blockOf(now.Unix()))
	closed := now.Add(-addUntil).Unix() // blocks ended before this take no more counts
	groups := map[blockRef][]offsetCount{}
	late := int64(0)
	for c, n := range s.pending {
		b := blockOf(c.sec)
		if (b+1)*blockSeconds < closed {
			late += int64(n)
			continue
		}
		g := blockRef{c.company, c.mode, b}
		groups[g] = append(groups[g], offsetCount{int(c.sec - b*blockSeconds), n})
	}
	dropped := s.dropped
	s.pending, s.dropped = make(map[cell]uint32, len(s.pending)), 0
	if dropped > 0 || late > 0 {
		s.log.Warn("shape: requests not recorded", "overflow", dropped, "late", late)
	}
	if len(groups) == 0 {
		return nil
	}
	pipe := s.rdb.Pipeline()
	cmds := make([]blockWrite, 0, len(groups))
	for g, ocs := range groups {
		cmds = append(cmds, s.queueWrite(ctx, pipe, g, ocs))
	}
	_, _ = pipe.Exec(ctx) // each command carries its own error
	var err error
	for _, c := range cmds {
		if e := c.add.Err(); e != nil {
			err = cmp.Or(err, e)
			for _, oc := range groups[c.g] {
				s.add(c.g.company, c.g.mode, c.g.block*blockSeconds+int64(oc.offset), int(oc.n))
			}
			continue
		}
		if c.made != nil && answered(c.made[0]) && answered(c.made[1]) {
			s.made[c.g] = true
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
	made []redis.Cmder // its SET NX and ZADD NX, on its first write by this instance
	add  redis.Cmder
}

// answered: the command ran (a SET NX that found the key answers nil).
func answered(c redis.Cmder) bool { return c.Err() == nil || errors.Is(c.Err(), redis.Nil) }

// queueWrite queues one block's counts on pipe.
func (s *Store) queueWrite(ctx context.Context, pipe redis.Pipeliner, g blockRef, ocs []offsetCount) (c blockWrite) {
	c.g = g
	key := s.rawKey(g.company, g.mode, g.block)
	if !s.made[g] {
		due := (g.block+1)*blockSeconds + int64(summarizeAfter/time.Second)
		c.made = []redis.Cmder{
			pipe.SetArgs(ctx, key, zeroBlock, redis.SetArgs{Mode: "NX", TTL: fineKept}),
			pipe.ZAddNX(ctx, s.dueKey(), redis.Z{Score: float64(due), Member: dueMember(g.company, g.mode, g.block)}),
		}
	}
	if s.script {
		args := make([]any, 0, 2*len(ocs))
		for _, oc := range ocs {
			args = append(args, oc.offset, oc.n)
		}
		c.add = addScript.Eval(ctx, pipe, []string{key}, args...)
		return c
	}
	args := make([]any, 0, 2+4*len(ocs))
	args = append(args, "OVERFLOW", "SAT")
	for _, oc := range ocs {
		args = append(args, "INCRBY", "u16", "#"+strconv.Itoa(oc.offset), oc.n)
	}
	c.add = pipe.BitField(ctx, key, args...)
	return c
}

// addScript is what BITFIELD's OVERFLOW SAT INCRBY u16 does, for a Redis
// without BITFIELD (Config.AddByScript): ARGV holds pairs of a counter's
// index and the count to add to it.
var addScript = redis.NewScript(`
for i = 1, #ARGV, 2 do
  local o = 2 * tonumber(ARGV[i])
  local b = redis.call('GETRANGE', KEYS[1], o, o + 1)
  local v = 0
  if #b == 2 then v = string.byte(b, 1) * 256 + string.byte(b, 2) end
  v = math.min(65535, v + tonumber(ARGV[i + 1]))
  redis.call('SETRANGE', KEYS[1], o, string.char(math.floor(v / 256), v % 256))
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
