package tenants

import (
	"context"
	"fmt"
	"sync"

	"github.com/redis/go-redis/v9"
)

// Refreshes of one Limiter share Redis round trips and script calls: the
// refreshes queued while a round trip is in flight are sent together as soon
// as it returns, in one call of refreshScript (one per company on Redis
// Cluster, pipelined). An idle instance sends a lone refresh at once, so
// batching adds no latency; under load it saves a round trip, a syscall pair,
// the client's per-command work and Redis's per-call work per refresh. Redis
// takes a call's refreshes one after the other, each seeing the previous
// one's effect, so the global accuracy is that of one call per refresh.

// maxBatch bounds one pipeline, so that one slow round trip does not hold
// hundreds of refreshes; the rest go in the next round.
const maxBatch = 128

// batcher queues the states whose lease needs a refresh (one entry per state
// at most: lease.inflight); busy means one goroutine is sending rounds and
// will pick up whatever is queued.
type batcher struct {
	mu    sync.Mutex
	queue []*state
	busy  bool
}

// refresh is one state's part of a round: what it asks and gives.
type refresh struct {
	st               *state
	need, want, give int
}

// schedule queues a refresh of st. If no round is being sent, the caller
// sends this one itself (its own request is in it); later arrivals are sent
// by a goroutine, so that this request does not wait for them.
func (l *Limiter) schedule(st *state) {
	b := &l.batch
	b.mu.Lock()
	b.queue = append(b.queue, st)
	lead := !b.busy
	b.busy = true
	b.mu.Unlock()
	if lead && l.sendRound() {
		go func() {
			for l.sendRound() {
			}
		}()
	}
}

// sendRound sends the queued refreshes in one round trip and reports whether
// more are queued; when none are, it leaves the batcher idle.
func (l *Limiter) sendRound() (more bool) {
	b := &l.batch
	b.mu.Lock()
	n := min(len(b.queue), maxBatch)
	states := make([]*state, n)
	copy(states, b.queue)
	rest := copy(b.queue, b.queue[n:])
	clear(b.queue[rest:])
	b.queue = b.queue[:rest]
	if n == 0 {
		b.busy = false
	}
	b.mu.Unlock()
	if n == 0 {
		return false
	}

	now := l.now()
	round := make([]refresh, n)
	for i, st := range states {
		st.mu.Lock()
		dropped := st.lease.prepare(now.UnixNano())
		round[i] = refresh{st: st, need: st.lease.sent, want: st.lease.want, give: st.lease.give}
		st.mu.Unlock()
		l.stats.tokensDropped.Add(uint64(dropped))
	}
	// The round has its own deadline: the callers' contexts may end while it
	// is in flight, and each caller waits no longer than its own.
	ctx, cancel := context.WithTimeout(context.Background(), l.timeout)
	defer cancel()
	again := l.send(ctx, l.group(round), now.UnixNano())

	b.mu.Lock()
	b.queue = append(b.queue, again...)
	more = len(b.queue) > 0
	if !more {
		b.busy = false
	}
	b.mu.Unlock()
	return more
}

// group splits a round into script calls: one call for the whole round, or,
// where keys are spread over nodes, one per company (a company's keys share a
// hash tag, hence a slot).
func (l *Limiter) group(round []refresh) [][]refresh {
	if !l.oneCompanyPerCall || len(round) == 1 {
		return [][]refresh{round}
	}
	at := make(map[string]int, len(round))
	var groups [][]refresh
	for _, r := range round {
		i, ok := at[r.st.key.company]
		if !ok {
			i = len(groups)
			at[r.st.key.company] = i
			groups = append(groups, nil)
		}
		groups[i] = append(groups[i], r)
	}
	return groups
}

// scriptArgs are refreshScript's KEYS and ARGV for the refreshes of g.
func (l *Limiter) scriptArgs(g []refresh) ([]string, []any) {
	keys := make([]string, 0, 3*len(g))
	args := make([]any, 0, len(l.defaults4)+1+4*len(g))
	args = append(args, l.defaults4...)
	args = append(args, l.id)
	for _, r := range g {
		c, m := r.st.key.company, r.st.key.mode
		keys = append(keys, tatKey(l.prefix, c, m), overrideKey(l.prefix, c), instancesKey(l.prefix, c, m))
		args = append(args, modeField[m.Index()], r.need, r.want, r.give)
	}
	return keys, args
}

// send runs one script call per group: a lone call directly (by SHA, in full
// again if Redis does not know the script: a restarted or flushed Redis),
// several in one pipeline; it applies the replies and returns the states that
// need another refresh.
func (l *Limiter) send(ctx context.Context, groups [][]refresh, now int64) (again []*state) {
	l.stats.redisCalls.Add(uint64(len(groups)))
	if len(groups) == 1 {
		keys, args := l.scriptArgs(groups[0])
		v, err := refreshScript.Run(ctx, l.rdb, keys, args...).Result()
		return l.apply(groups[0], v, err, now, again)
	}
	for i, cmd := range l.pipelined(ctx, groups) {
		v, err := cmd.Result()
		again = l.apply(groups[i], v, err, now, again)
	}
	return again
}

// apply hands each refresh of one script call its part of the reply (seven
// values each, in order), and appends those that need another refresh to
// again.
func (l *Limiter) apply(g []refresh, v any, err error, now int64, again []*state) []*state {
	a, ok := v.([]any)
	if err == nil && (!ok || len(a) != replyLen*len(g)) {
		err = fmt.Errorf("%w: %T of length %d for %d refreshes", errBadReply, v, len(a), len(g))
	}
	for i, r := range g {
		var gr grant
		if err == nil {
			gr, err = parseReply(a[replyLen*i : replyLen*(i+1) : replyLen*(i+1)])
		}
		if l.finish(r.st, gr, err, now) {
			again = append(again, r.st)
		}
	}
	return again
}

// finish applies one refresh's outcome to its state and reports whether the
// state needs another refresh.
func (l *Limiter) finish(st *state, g grant, err error, now int64) (again bool) {
	st.mu.Lock()
	if err != nil {
		dropped := st.lease.fail(err)
		st.mu.Unlock()
		l.stats.tokensDropped.Add(uint64(dropped))
		return false
	}
	o, again := st.lease.complete(g, now, l.leaseTTL)
	st.mu.Unlock()
	st.remember(g.limit)
	l.stats.refreshed(o)
	return again
}

// pipelined sends several groups' calls in one pipeline, by SHA, then again
// in full (EVAL) those Redis did not know.
func (l *Limiter) pipelined(ctx context.Context, groups [][]refresh) []*redis.Cmd {
	cmds := make([]*redis.Cmd, len(groups))
	pipe := l.rdb.Pipeline()
	for i, g := range groups {
		keys, args := l.scriptArgs(g)
		cmds[i] = refreshScript.EvalSha(ctx, pipe, keys, args...)
	}
	_, _ = pipe.Exec(ctx) // each command carries its own error
	var again redis.Pipeliner
	for i, g := range groups {
		if err := cmds[i].Err(); err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
			if again == nil {
				again = l.rdb.Pipeline()
			}
			keys, args := l.scriptArgs(g)
			cmds[i] = refreshScript.Eval(ctx, again, keys, args...)
		}
	}
	if again != nil {
		_, _ = again.Exec(ctx)
	}
	return cmds
}
