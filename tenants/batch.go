package tenants

import (
	"context"
	"fmt"
	"sync"

	"github.com/invoicing-ao/gateway/invoicing"
	"github.com/redis/go-redis/v9"
)

// Concurrent decisions of one Limiter share Redis round trips and script
// calls: the decisions that arrive while a round trip is in flight are sent
// together as soon as it returns, in one call of allowScript (one per company
// on Redis Cluster, pipelined). An idle instance sends a lone decision at
// once, so batching adds no latency; under load it saves a round trip, a
// syscall pair, the client's per-command work and Redis's per-call work per
// decision. Redis takes a call's decisions one after the other, each seeing
// the previous one's effect, so the global accuracy is that of one call per
// decision.

// maxBatch bounds one pipeline, so that one slow round trip does not hold
// hundreds of decisions; the rest go in the next round.
const maxBatch = 128

type decideCall struct {
	companyID string
	m         invoicing.Mode
	d         Decision
	err       error
	done      chan struct{}
}

// batcher queues decisions; busy means one goroutine is sending rounds and
// will pick up whatever is queued.
type batcher struct {
	mu    sync.Mutex
	queue []*decideCall
	busy  bool
}

// decideRedis asks Redis for one decision, within the limiter's timeout.
func (l *Limiter) decideRedis(ctx context.Context, companyID string, m invoicing.Mode) (Decision, error) {
	if err := ctx.Err(); err != nil {
		return Decision{}, err
	}
	c := &decideCall{companyID: companyID, m: m, done: make(chan struct{})}
	b := &l.batch
	b.mu.Lock()
	b.queue = append(b.queue, c)
	lead := !b.busy
	b.busy = true
	b.mu.Unlock()
	if lead {
		// This call's round includes it; later arrivals are sent by a
		// goroutine so that this request does not wait for them.
		if l.sendRound() {
			go func() {
				for l.sendRound() {
				}
			}()
		}
	}
	select {
	case <-c.done:
		return c.d, c.err
	default:
	}
	ctx, cancel := context.WithTimeout(ctx, l.timeout)
	defer cancel()
	select {
	case <-c.done:
		return c.d, c.err
	case <-ctx.Done():
		return Decision{}, ctx.Err()
	}
}

// sendRound sends the queued decisions in one round trip and reports whether
// more are queued; when none are, it leaves the batcher idle.
func (l *Limiter) sendRound() (more bool) {
	b := &l.batch
	b.mu.Lock()
	n := min(len(b.queue), maxBatch)
	calls := make([]*decideCall, n)
	copy(calls, b.queue)
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

	// The round has its own deadline: the callers' contexts may end while it
	// is in flight, and each caller waits no longer than its own.
	ctx, cancel := context.WithTimeout(context.Background(), l.timeout)
	defer cancel()
	l.send(ctx, l.group(calls))

	b.mu.Lock()
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
func (l *Limiter) group(calls []*decideCall) [][]*decideCall {
	if !l.oneCompanyPerCall || len(calls) == 1 {
		return [][]*decideCall{calls}
	}
	at := make(map[string]int, len(calls))
	var groups [][]*decideCall
	for _, c := range calls {
		i, ok := at[c.companyID]
		if !ok {
			i = len(groups)
			at[c.companyID] = i
			groups = append(groups, nil)
		}
		groups[i] = append(groups[i], c)
	}
	return groups
}

// scriptArgs are allowScript's KEYS and ARGV for the decisions of g.
func (l *Limiter) scriptArgs(g []*decideCall) ([]string, []any) {
	keys := make([]string, 0, 2*len(g))
	args := make([]any, 0, len(l.defaults4)+len(g))
	args = append(args, l.defaults4...)
	for _, c := range g {
		keys = append(keys, tatKey(l.prefix, c.companyID, c.m), overrideKey(l.prefix, c.companyID))
		args = append(args, modeField[c.m.Index()])
	}
	return keys, args
}

// send runs one script call per group: a lone call directly, several in one
// pipeline, by SHA, and again in full (EVAL) for those Redis did not know
// (NOSCRIPT: a restarted or flushed Redis), as Script.Run does for one call.
func (l *Limiter) send(ctx context.Context, groups [][]*decideCall) {
	if len(groups) == 1 {
		keys, args := l.scriptArgs(groups[0])
		v, err := allowScript.Run(ctx, l.rdb, keys, args...).Result()
		finishGroup(groups[0], v, err)
		return
	}
	cmds := make([]*redis.Cmd, len(groups))
	pipe := l.rdb.Pipeline()
	for i, g := range groups {
		keys, args := l.scriptArgs(g)
		cmds[i] = allowScript.EvalSha(ctx, pipe, keys, args...)
	}
	_, _ = pipe.Exec(ctx) // each command carries its own error
	var again redis.Pipeliner
	for i, g := range groups {
		if err := cmds[i].Err(); err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
			if again == nil {
				again = l.rdb.Pipeline()
			}
			keys, args := l.scriptArgs(g)
			cmds[i] = allowScript.Eval(ctx, again, keys, args...)
		}
	}
	if again != nil {
		_, _ = again.Exec(ctx)
	}
	for i, g := range groups {
		v, err := cmds[i].Result()
		finishGroup(g, v, err)
	}
}

// finishGroup answers the decisions of one script call from its reply: six
// values per decision, in order.
func finishGroup(g []*decideCall, v any, err error) {
	a, ok := v.([]any)
	if err == nil && (!ok || len(a) != 6*len(g)) {
		err = fmt.Errorf("%w: %T of length %d for %d decisions", errBadReply, v, len(a), len(g))
	}
	for i, c := range g {
		if err != nil {
			c.finish(nil, err)
			continue
		}
		c.finish(a[6*i:6*i+6:6*i+6], nil)
	}
}

func (c *decideCall) finish(v any, err error) {
	if err == nil {
		c.d, c.err = parseReply(v)
	} else {
		c.err = err
	}
	close(c.done)
}
