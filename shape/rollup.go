package shape

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/invoicing-ao/gateway/invoicing"
)

// Summarizing. Two minutes after a block ends, the first instance to find
// it due reads its raw seconds and appends them, compact, to its day's
// 48-hour record, and its minute summaries to the day's 30-day record; it
// adds its busy seconds to the day's distribution, sets the company's p99
// of the day (Peaks), and lets the raw block expire ten minutes later. To
// claim a block, an instance moves it a minute later in the due set: the
// move that lands first (score + claimDelay) is the claim; an instance that
// stops before it is done leaves the block due again a minute later, and a
// block summarized twice reads as once (the reader keeps one record per
// block), though its seconds then count twice in the day's distribution.

// maxSummaries bounds the blocks one flush summarizes.
const maxSummaries = 512

const claimDelay = 60 // seconds

// dueBlock is a block to summarize.
type dueBlock struct {
	blockRef
	member string
	raw    *redis.StringCmd
	hist   *redis.MapStringStringCmd // the day's distribution after this block
}

// rollup summarizes the blocks due. Called with flushMu held.
func (s *Store) rollup(ctx context.Context) error {
	mine, err := s.claimDue(ctx)
	if err != nil || len(mine) == 0 {
		return err
	}
	pipe := s.rdb.Pipeline()
	for i := range mine {
		mine[i].raw = pipe.Get(ctx, s.rawKey(mine[i].company, mine[i].mode, mine[i].block))
	}
	_, _ = pipe.Exec(ctx) // each read carries its own error
	pipe = s.rdb.Pipeline()
	var readErr error
	for i := range mine {
		if err := mine[i].raw.Err(); err != nil && !errors.Is(err, redis.Nil) {
			readErr = cmp.Or(readErr, err) // left due: read again a minute later
			continue
		}
		s.queueSummary(ctx, pipe, &mine[i])
	}
	if readErr != nil {
		readErr = unavailable("summarize", readErr)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return errors.Join(readErr, unavailable("summarize", err))
	}
	pipe = s.rdb.Pipeline()
	for _, d := range mine {
		if d.hist == nil {
			continue
		}
		day := dayOfBlock(d.block)
		key := s.p99Key(d.mode, day)
		pipe.ZAdd(ctx, key, redis.Z{Score: float64(p99(d.hist.Val())), Member: d.company})
		pipe.ExpireAt(ctx, key, time.Unix(dayEnd(day), 0).Add(dayStatsKept))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return errors.Join(readErr, unavailable("summarize", err))
	}
	return readErr
}

// claimDue finds the blocks due and claims what it can of them.
func (s *Store) claimDue(ctx context.Context) ([]dueBlock, error) {
	now := s.now().Unix()
	due, err := s.rdb.ZRangeByScoreWithScores(ctx, s.dueKey(), &redis.ZRangeBy{Min: "-inf", Max: strconv.FormatInt(now, 10), Count: maxSummaries}).Result()
	if err != nil {
		return nil, unavailable("summarize", err)
	}
	if len(due) == 0 {
		return nil, nil
	}
	pipe := s.rdb.Pipeline()
	moves := make([]*redis.FloatCmd, len(due))
	for i, z := range due {
		moves[i] = pipe.ZIncrBy(ctx, s.dueKey(), claimDelay, z.Member.(string))
	}
	_, _ = pipe.Exec(ctx) // each move carries its own error
	var mine []dueBlock
	for i, z := range due {
		member := z.Member.(string)
		if moves[i].Err() != nil || moves[i].Val() != z.Score+claimDelay {
			continue // another instance moved it first
		}
		ref, ok := parseDue(member)
		if !ok { // not ours to read: forget it
			s.rdb.ZRem(ctx, s.dueKey(), member)
			continue
		}
		mine = append(mine, dueBlock{blockRef: ref, member: member})
	}
	return mine, nil
}

// parseDue reads a due set member (dueMember).
func parseDue(member string) (blockRef, bool) {
	mode, rest, ok1 := strings.Cut(member, "|")
	block, company, ok2 := strings.Cut(rest, "|")
	b, err := strconv.ParseInt(block, 10, 64)
	m, errMode := invoicing.ParseMode(mode)
	if !ok1 || !ok2 || err != nil || errMode != nil || company == "" {
		return blockRef{}, false
	}
	return blockRef{company: company, mode: m, block: b}, true
}

// queueSummary queues the writes of one claimed block's summaries, whose
// raw seconds were read (or found missing: expired unsummarized, instances
// stopped for two days).
func (s *Store) queueSummary(ctx context.Context, pipe redis.Pipeliner, d *dueBlock) {
	defer pipe.ZRem(ctx, s.dueKey(), d.member) // last: a failure before it leaves the block due
	raw, err := d.raw.Bytes()
	if err != nil {
		return
	}
	blk, err := rawBlock(raw)
	if err != nil {
		s.log.Warn("shape: a recorded block is unreadable; it is left out", "company", d.company, "mode", string(d.mode), "block", d.block)
		return
	}
	day, bod := dayOfBlock(d.block), blockOfDay(d.block)
	fine := compact(blk, nil)
	if len(fine) == 0 {
		return // made, never counted in
	}
	rec := binary.AppendUvarint([]byte{bod}, uint64(len(fine)))
	end := time.Unix(dayEnd(day), 0)
	appendExactly(ctx, pipe, s.fineKey(d.company, d.mode, day), append(rec, fine...), end.Add(fineKept))
	appendExactly(ctx, pipe, s.coarseKey(d.company, d.mode, day), appendMinutes([]byte{bod}, blk), end.Add(coarseKept))
	var byClass [128]int64
	for _, n := range blk.counts {
		if n > 0 {
			byClass[rateClass(n)]++
		}
	}
	hk := s.dayStatsKey(d.company, d.mode, day)
	for c, n := range byClass {
		if n > 0 {
			pipe.HIncrBy(ctx, hk, strconv.Itoa(c), n)
		}
	}
	pipe.ExpireAt(ctx, hk, time.Unix(dayEnd(day), 0).Add(dayStatsKept))
	d.hist = pipe.HGetAll(ctx, hk)
	pipe.Expire(ctx, s.rawKey(d.company, d.mode, d.block), rawKept)
}

// appendScript appends ARGV[1] to the string at KEYS[1], which expires at
// ARGV[2] (unix seconds), and leaves it exactly as long as its value: APPEND
// would leave it up to twice as large (Redis allocates ahead, by doubling,
// for the appends to come), and a day's records are appended to 144 times
// and then kept for days. Copying a day's record within Redis, 144 times a
// day per company and mode, costs far less than the memory it saves.
var appendScript = redis.NewScript(`
local v = redis.call('GET', KEYS[1])
if v then v = v .. ARGV[1] else v = ARGV[1] end
redis.call('SET', KEYS[1], v, 'EXAT', ARGV[2])
return #v
`)

// appendExactly queues appendScript. In full (EVAL), not by its digest: a
// Redis that does not know the script (restarted, failed over) would refuse
// the digest in a pipeline whose later commands still run, and the block
// would be taken off the due set unsummarized. The script is short, and
// sent once per block.
func appendExactly(ctx context.Context, pipe redis.Pipeliner, key string, rec []byte, expires time.Time) {
	appendScript.Eval(ctx, pipe, []string{key}, rec, expires.Unix())
}

// p99 is the 99th percentile of a day's busy seconds, from their
// distribution by rate class: the top of the class it falls in.
func p99(hist map[string]string) uint32 {
	var byClass [128]int64
	total := int64(0)
	for f, v := range hist {
		c, err1 := strconv.Atoi(f)
		n, err2 := strconv.ParseInt(v, 10, 64)
		if err1 != nil || err2 != nil || c < 1 || c >= len(byClass) || n <= 0 {
			continue
		}
		byClass[c] += n
		total += n
	}
	rank := int64(math.Ceil(0.99 * float64(total)))
	seen := int64(0)
	for c, n := range byClass {
		if seen += n; n > 0 && seen >= rank {
			return classTop(c)
		}
	}
	return 0
}
