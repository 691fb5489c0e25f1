package tenants

import (
	"context"
	"sync"

	"github.com/redis/go-redis/v9"
)

// Concurrent decisions of one Limiter share Redis round trips: each decision
// is still its own atomic script call (allowScript), but the calls that arrive
// while a round trip is in flight are sent together, pipelined, as soon as it
// returns. An idle instance sends a lone decision at once, as before, so
// batching adds no latency; under load it saves a round trip, a syscall pair
// and most of the client's per-command work per decision. Redis runs the
// scripts one after the other, so every decision sees the previous one's
// effect exactly as without batching: the global accuracy is unchanged.

// maxBatch bounds one pipeline, so that one slow round trip does not hold
// hundreds of decisions; the rest go in the next round.
const maxBatch = 128

type decideCall struct {
	companyID string
	m         mode
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
func (l *Limiter) decideRedis(ctx context.Context, companyID string, m mode) (Decision, error) {
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
	if n == 1 {
		c := calls[0]
		v, err := allowScript.Run(ctx, l.rdb, l.keys(c), l.args[c.m]...).Result()
		c.finish(v, err)
	} else {
		l.sendPipelined(ctx, calls)
	}

	b.mu.Lock()
	more = len(b.queue) > 0
	if !more {
		b.busy = false
	}
	b.mu.Unlock()
	return more
}

func (l *Limiter) keys(c *decideCall) []string {
	return []string{tatKey(l.prefix, c.companyID, c.m), overrideKey(l.prefix, c.companyID)}
}

// sendPipelined runs the scripts by their SHA in one pipeline, and again in
// full (EVAL) for those Redis did not know (NOSCRIPT: a restarted or flushed
// Redis), as Script.Run does for one call.
func (l *Limiter) sendPipelined(ctx context.Context, calls []*decideCall) {
	cmds := make([]*redis.Cmd, len(calls))
	pipe := l.rdb.Pipeline()
	for i, c := range calls {
		cmds[i] = allowScript.EvalSha(ctx, pipe, l.keys(c), l.args[c.m]...)
	}
	_, _ = pipe.Exec(ctx) // each command carries its own error
	var again redis.Pipeliner
	for i, c := range calls {
		if err := cmds[i].Err(); err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
			if again == nil {
				again = l.rdb.Pipeline()
			}
			cmds[i] = allowScript.Eval(ctx, again, l.keys(c), l.args[c.m]...)
		}
	}
	if again != nil {
		_, _ = again.Exec(ctx)
	}
	for i, c := range calls {
		c.finish(cmds[i].Result())
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
