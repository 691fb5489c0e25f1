package events

import (
	"context"
	"sync"
	"time"
)

// endpointCache keeps endpoints read for deliveries while the endpoints'
// version stays where it was when they were read, and at most a second:
// a secret rotated, a URL changed or an endpoint disabled through the
// admin API applies to the next batch of deliveries, on every instance,
// without a read of each endpoint per batch. (The second bounds what
// changes without moving the version, such as the disabling of an endpoint
// failing for days.)
type endpointCache struct {
	es   *Webhooks
	mu   sync.Mutex
	byID map[string]cachedEndpoint
}

type cachedEndpoint struct {
	e   *Webhook
	at  time.Time
	ver string
}

func newEndpointCache(es *Webhooks) *endpointCache {
	return &endpointCache{es: es, byID: map[string]cachedEndpoint{}}
}

// get returns the claims' endpoints, reading the stale or missing ones in
// one round trip; ver is the endpoints' version read before.
func (c *endpointCache) get(ctx context.Context, claims []claim, ver string) map[string]*Webhook {
	now := c.es.now()
	out := map[string]*Webhook{}
	var missing []string
	c.mu.Lock()
	for _, cl := range claims {
		if _, seen := out[cl.endpoint]; seen {
			continue
		}
		if ce, ok := c.byID[cl.endpoint]; ok && ce.ver == ver && now.Sub(ce.at) < time.Second {
			out[cl.endpoint] = ce.e
			continue
		}
		out[cl.endpoint] = nil
		missing = append(missing, cl.endpoint)
	}
	c.mu.Unlock()
	if len(missing) == 0 {
		return out
	}
	eps, err := c.es.endpointsByID(ctx, missing)
	if err != nil {
		return out
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.byID) > 10_000 {
		clear(c.byID)
	}
	for i := range eps {
		e := &eps[i]
		out[e.ID] = e
		c.byID[e.ID] = cachedEndpoint{e: e, at: now, ver: ver}
	}
	return out
}
