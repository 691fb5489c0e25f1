package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// Deleting an endpoint, and deleting it again: what a deletion removed is
// kept for Retention (layout.deletedRecord), so that a repeated deletion,
// after one Redis's replicas did not confirm (replicas.go), answers as the
// first did and confirms it; and a mark of the deletion is kept longer
// (layout.deleted), so that an import of an older export leaves it deleted
// (state.go).

// deleteScript removes an endpoint and its queue (KEYS[1] the endpoint;
// ARGV the company's set, the companies set, company, id, queue, lease, log,
// ready, version, the deletion's mark, now (ms), how long the mark is kept
// (ms), the deleted record, the endpoint's JSON, how long it is kept (ms)).
// The deliveries' records expire by themselves; the mark keeps an import of
// an older export from bringing the endpoint back (state.go), the record
// answers a repeated deletion (deletion.go).
var deleteScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('SET', ARGV[10], ARGV[11], 'PX', ARGV[12])
redis.call('DEL', KEYS[1], ARGV[5], ARGV[6], ARGV[7])
redis.call('SREM', ARGV[1], ARGV[4])
if redis.call('SCARD', ARGV[1]) == 0 then redis.call('SREM', ARGV[2], ARGV[3]) end
redis.call('ZREM', ARGV[8], ARGV[4])
redis.call('INCR', ARGV[9])
redis.call('SET', ARGV[13], ARGV[14], 'PX', ARGV[15])
return 1`)

// DeleteWebhook deletes an endpoint, what waits for it and its log; it
// returns the endpoint as it was. Deleting it again within Retention
// answers the same endpoint with deleted false, and confirms the first
// deletion with Redis's replicas (replicas.go); after that, ErrNotFound.
func (es *Webhooks) DeleteWebhook(ctx context.Context, id string) (e Webhook, deleted bool, err error) {
	if e, err = es.Webhook(ctx, id); err == nil {
		deleted, err = es.remove(ctx, e, true)
	}
	if errors.Is(err, ErrNotFound) {
		e, err = es.deletedBefore(ctx, id)
	}
	if err != nil && !errors.Is(err, ErrNotReplicated) {
		return Webhook{}, false, err
	}
	return e, deleted, err
}

// remove deletes e, waiting for the replicas when wait is set
// (ErrNotReplicated: deleted, unconfirmed). ErrNotFound when it was deleted
// meanwhile.
func (es *Webhooks) remove(ctx context.Context, e Webhook, wait bool) (bool, error) {
	gone, _ := json.Marshal(e) // its public fields: no secret
	run := func(c redis.Cmdable) (int, error) {
		return deleteScript.Run(ctx, c, []string{es.l.endpoint(e.ID)}, es.l.endpoints(e.Mode, e.CompanyID), es.l.companies(e.Mode),
			e.CompanyID, e.ID, es.l.queue(e.ID), es.l.lease(e.ID), es.l.log(e.ID), es.l.ready(), es.l.version(),
			es.l.deleted(e.ID), es.now().UnixMilli(), deletedKept.Milliseconds(), es.l.deletedRecord(e.ID), gone, es.retention.Milliseconds()).Int()
	}
	var ok int
	var unconfirmed bool
	var err error
	if wait {
		unconfirmed, err = es.confirm(ctx, es.l.endpoint(e.ID), func(c redis.Cmdable) (err error) { ok, err = run(c); return err })
	} else {
		ok, err = run(es.rdb)
	}
	switch {
	case err != nil:
		return false, unavailable(err)
	case ok == 0:
		return false, ErrNotFound
	case unconfirmed:
		return true, ErrNotReplicated
	}
	return true, nil
}

// deletedBefore is the endpoint a deletion within Retention removed, its
// record written again and confirmed like the deletion (replicas.go).
func (es *Webhooks) deletedBefore(ctx context.Context, id string) (Webhook, error) {
	if !validEndpointID(id) {
		return Webhook{}, ErrNotFound
	}
	var raw string
	unconfirmed, err := es.confirm(ctx, es.l.deletedRecord(id), func(c redis.Cmdable) (err error) {
		raw, err = goneScript.Run(ctx, c, []string{es.l.deletedRecord(id)}).Text()
		return err
	})
	switch {
	case errors.Is(err, redis.Nil):
		return Webhook{}, ErrNotFound
	case err != nil:
		return Webhook{}, unavailable(err)
	}
	var e Webhook
	if err := json.Unmarshal([]byte(raw), &e); err != nil {
		return Webhook{}, fmt.Errorf("events: endpoint %s: corrupt deletion record: %w", id, err)
	}
	if unconfirmed {
		return e, ErrNotReplicated
	}
	return e, nil
}
