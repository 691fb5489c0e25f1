package admin

import (
	"context"
	"runtime"
	"strconv"
	"time"

	"github.com/invoicing-ao/gateway/invoicing"
	"github.com/invoicing-ao/gateway/web"
)

// The admin's expensive reads (a what-if or a shape: up to 30 days of a
// company's traffic read from Redis and replayed) run a few at a time, so
// that the platform team's questions never take the public API's cores or
// memory: on two cores, one at a time, and one window's seconds in memory
// (about 10 MB for 30 days) instead of one per question. Each turn is given
// back as long after the read ends as the read took, so that reads asked
// one after another take at most half of a core each. A read waits its turn
// for a few seconds, then is answered 503 admin_busy with Retry-After.

var _ = invoicing.Define(invoicing.Error{Kind: invoicing.Unavailable, Code: "admin_busy", Title: "Admin API busy",
	Message: "admin: too many expensive reads at once"})

// busyRetry is the Retry-After of admin_busy.
const busyRetry = 2 * time.Second

// gate lets n reads run at once, the others wait up to wait.
type gate struct {
	slots chan struct{}
	wait  time.Duration
}

func newGate(n int, wait time.Duration) *gate {
	if n <= 0 {
		n = max(1, runtime.GOMAXPROCS(0)/2)
	}
	if wait <= 0 {
		wait = 5 * time.Second
	}
	return &gate{slots: make(chan struct{}, n), wait: wait}
}

// acquire waits for a turn; release gives it back, as long after the read
// as the read took.
func (g *gate) acquire(ctx context.Context) (release func(), err error) {
	var start time.Time
	release = func() { time.AfterFunc(time.Since(start), func() { <-g.slots }) }
	select {
	case g.slots <- struct{}{}:
		start = time.Now()
		return release, nil
	default:
	}
	t := time.NewTimer(g.wait)
	defer t.Stop()
	select {
	case g.slots <- struct{}{}:
		start = time.Now()
		return release, nil
	case <-t.C:
		return nil, &web.Error{Code: "admin_busy", RetryAfter: busyRetry,
			Detail: "Other what-if and traffic shape reads are running (" + strconv.Itoa(cap(g.slots)) + " at a time, so that the public API keeps its cores); retry after Retry-After."}
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}
