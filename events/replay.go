package events

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/invoicing-ao/gateway/invoicing"
)

// TestType is the type of a test delivery (SendTest): sent to one endpoint
// on request, whatever types it subscribes to, to check that it receives and
// verifies deliveries. Its data is {"endpointId", "message"}.
const TestType Type = "webhook.test"

// Errors of replays.
var (
	// ErrGone: the event is older than the retention; it cannot be sent again.
	ErrGone = invoicing.Define(invoicing.Error{Kind: invoicing.Conflict, Code: "event_expired", Title: "Event no longer kept",
		Detail: "The event is older than the retention and cannot be sent again; sync with updatedSince instead.", Message: "events: event expired"})
	// ErrInFlight: the delivery is being made now.
	ErrInFlight = invoicing.Define(invoicing.Error{Kind: invoicing.Conflict, Code: "delivery_in_flight", Title: "Delivery in flight",
		Detail: "The event is being delivered to this endpoint now; see its outcome in the delivery log.", Message: "events: delivery in flight"})
)

// requeueScript queues deliveries again (ARGV[2] endpoint, ARGV[3] now, ARGV[4]
// per-endpoint cap, ARGV[5] "failed" to take only failed ones, then event
// ids): each as a new delivery, its attempts counted afresh (its earlier
// attempts stay in its log). It returns, per id, 1 queued, 0 skipped (not
// failed, with ARGV[5]), -2 gone (past the retention), -3 in flight; or -1
// alone when the endpoint does not exist.
var requeueScript = redis.NewScript(scheduleFn + `
local ep, now, cap, onlyFailed = ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5] == 'failed'
if redis.call('EXISTS', pfx .. 'ep:' .. ep) == 0 then return {-1} end
local out = {}
for i = 6, #ARGV do
  local id = ARGV[i]
  local d = pfx .. 'd:' .. ep .. ':' .. id
  local st = redis.call('HGET', d, 'st')
  if redis.call('EXISTS', pfx .. 'msg:' .. id) == 0 or not st then
    out[#out + 1] = -2
  elseif redis.call('ZSCORE', pfx .. 'lease:' .. ep, id) then
    out[#out + 1] = -3
  elseif onlyFailed and st ~= 'failed' then
    out[#out + 1] = 0
  else
    redis.call('HSET', d, 'st', 'pending', 'n', 0, 'nx', now)
    redis.call('HDEL', d, 'done')
    redis.call('ZADD', pfx .. 'q:' .. ep, now, id)
    out[#out + 1] = 1
  end
end
schedule(ep, now, 0, cap)
return out`)

func (s *Service) requeue(ctx context.Context, endpointID string, onlyFailed bool, ids []string) ([]int64, error) {
	args := []any{s.l.p, endpointID, s.now().UnixMilli(), s.perEndpoint, ""}
	if onlyFailed {
		args[4] = "failed"
	}
	for _, id := range ids {
		args = append(args, id)
	}
	res, err := requeueScript.Run(ctx, s.rdb, []string{s.l.ready()}, args...).Int64Slice()
	if err != nil {
		return nil, unavailable(err)
	}
	if len(res) == 1 && res[0] == -1 {
		return nil, ErrNotFound
	}
	return res, nil
}

// Replay sends one event to an endpoint again, now, as a new delivery with
// the same id (receivers that processed it drop it), whatever its state:
// after a failure, or to let a receiver that lost it have it again.
func (s *Service) Replay(ctx context.Context, endpointID, eventID string) (Delivery, error) {
	if !validEndpointID(endpointID) || !validEventID(eventID) {
		return Delivery{}, ErrNotFound
	}
	res, err := s.requeue(ctx, endpointID, false, []string{eventID})
	if err != nil {
		return Delivery{}, err
	}
	switch res[0] {
	case -2:
		if _, ok, err := s.delivery(ctx, endpointID, eventID); err == nil && !ok {
			return Delivery{}, ErrNotFound // never this endpoint's
		}
		return Delivery{}, ErrGone
	case -3:
		return Delivery{}, ErrInFlight
	}
	return s.Delivery(ctx, endpointID, eventID)
}

// Recover sends again every failed delivery of an endpoint queued since
// since (Svix's "recover"): after fixing a receiver that was down longer
// than the retry schedule. It returns how many were queued.
func (s *Service) Recover(ctx context.Context, endpointID string, since time.Time) (int, error) {
	if !validEndpointID(endpointID) {
		return 0, ErrNotFound
	}
	if _, err := s.Endpoint(ctx, endpointID); err != nil {
		return 0, err
	}
	queued := 0
	for offset := int64(0); ; offset += 500 {
		ids, err := s.rdb.ZRangeByScore(ctx, s.l.log(endpointID), &redis.ZRangeBy{Min: fmt.Sprint(since.UnixMilli()), Max: "+inf",
			Offset: offset, Count: 500}).Result()
		if err != nil {
			return queued, unavailable(err)
		}
		if len(ids) == 0 {
			return queued, nil
		}
		res, err := s.requeue(ctx, endpointID, true, ids)
		if err != nil {
			return queued, err
		}
		for _, r := range res {
			if r == 1 {
				queued++
			}
		}
		if len(ids) < 500 {
			return queued, nil
		}
	}
}

// SendTest queues a test delivery (TestType) to an endpoint, now: a new
// event each time, sent whatever types the endpoint subscribes to (and
// held like any other while the endpoint is disabled).
func (s *Service) SendTest(ctx context.Context, endpointID string) (Event, error) {
	e, err := s.Endpoint(ctx, endpointID)
	if err != nil {
		return Event{}, err
	}
	var b [16]byte
	_, _ = rand.Read(b[:])
	data, _ := json.Marshal(map[string]string{"endpointId": e.ID,
		"message": "A test delivery from the invoicing platform: this endpoint receives and can verify its webhooks."})
	ev := Event{ID: "evt_" + idEncoding.EncodeToString(b[:]), Type: TestType, Mode: e.Mode, CompanyID: e.CompanyID,
		ResourceID: e.ID, Time: s.now().UTC().Truncate(time.Millisecond), Data: data}
	if _, _, err := s.enqueue(ctx, "", "", "", []queued{{ev: ev, eps: []string{e.ID}}}); err != nil {
		return Event{}, err
	}
	return ev, nil
}

// validEventID tells an event id of ours from anything else.
func validEventID(id string) bool {
	if len(id) != 30 || id[:4] != "evt_" {
		return false
	}
	_, err := idEncoding.DecodeString(id[4:])
	return err == nil
}
