package events

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/invoicing-ao/gateway/invoicing"
)

// TestType is the type of a test delivery (TestWebhook): sent to one endpoint
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
// per-endpoint cap, ARGV[5] "recover" to take only failed ones and those
// waiting for a retry, then event ids): each as a new delivery, due now, its
// attempts counted afresh (its earlier attempts stay in its log). It
// returns, per id, 1 queued (2 when it was waiting for a retry), 0 skipped
// (neither failed nor waiting, with ARGV[5]), -2 gone (past the retention),
// -3 in flight; or -1 alone when the endpoint does not exist.
var requeueScript = redis.NewScript(scheduleFn + `
local ep, now, cap, recovering = ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5] == 'recover'
if redis.call('EXISTS', pfx .. 'ep:' .. ep) == 0 then return {-1} end
local out = {}
for i = 6, #ARGV do
  local id = ARGV[i]
  local d = pfx .. 'd:' .. ep .. ':' .. id
  local f = redis.call('HMGET', d, 'st', 'nx')
  local st = f[1]
  -- Waiting: pending, its next attempt later than now (a retry's time; a
  -- delivery queued or sent again is due at once).
  local waiting = st == 'pending' and tonumber(f[2] or '0') > now
  if redis.call('EXISTS', pfx .. 'msg:' .. id) == 0 or not st then
    out[#out + 1] = -2
  elseif redis.call('ZSCORE', pfx .. 'lease:' .. ep, id) then
    out[#out + 1] = -3
  elseif recovering and st ~= 'failed' and not waiting then
    out[#out + 1] = 0
  else
    redis.call('HSET', d, 'st', 'pending', 'n', 0, 'nx', now)
    redis.call('HDEL', d, 'done')
    redis.call('ZADD', pfx .. 'q:' .. ep, now, id)
    if waiting then out[#out + 1] = 2 else out[#out + 1] = 1 end
  end
end
schedule(ep, now, 0, cap)
return out`)

func (qu *queue) requeue(ctx context.Context, endpointID string, recovering bool, ids []string) ([]int64, error) {
	args := []any{qu.l.p, endpointID, qu.now().UnixMilli(), qu.perEndpoint, ""}
	if recovering {
		args[4] = "recover"
	}
	for _, id := range ids {
		args = append(args, id)
	}
	res, err := requeueScript.Run(ctx, qu.rdb, []string{qu.l.ready()}, args...).Int64Slice()
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
	res, err := s.q.requeue(ctx, endpointID, false, []string{eventID})
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

// Recovered is what a recovery queued again, by what the deliveries were.
type Recovered struct {
	Failed  int `json:"failed"`  // given up: every attempt of the schedule failed
	Waiting int `json:"waiting"` // waiting for a retry, minutes to a day away
}

// Recover sends again, now, every delivery of an endpoint queued since
// since that failed or waits for a retry (Svix's "recover", with the
// waiting ones too): after fixing a receiver, one call sends everything it
// missed. Each is a new delivery with its attempts counted afresh; one
// being made now is left to finish.
func (s *Service) Recover(ctx context.Context, endpointID string, since time.Time) (Recovered, error) {
	var r Recovered
	if !validEndpointID(endpointID) {
		return r, ErrNotFound
	}
	if _, err := s.Webhook(ctx, endpointID); err != nil {
		return r, err
	}
	// Newest first, by the log's cursor: entries queued meanwhile (newer)
	// or trimmed (older) move no entry of the window out of its turn.
	for cursor := ""; ; {
		batch, next, err := s.logPage(ctx, endpointID, 500, cursor)
		if err != nil {
			return r, err
		}
		ids := make([]string, 0, len(batch))
		for _, e := range batch {
			if e.at < since.UnixMilli() {
				next = ""
				break
			}
			ids = append(ids, e.id)
		}
		if len(ids) > 0 {
			res, err := s.q.requeue(ctx, endpointID, true, ids)
			if err != nil {
				return r, err
			}
			for _, v := range res {
				switch v {
				case 1:
					r.Failed++
				case 2:
					r.Waiting++
				}
			}
		}
		if next == "" {
			return r, nil
		}
		cursor = next
	}
}

// TestWebhook queues a test delivery (TestType) to an endpoint, now: a new
// event each time, sent whatever types the endpoint subscribes to (and
// held like any other while the endpoint is disabled).
func (s *Service) TestWebhook(ctx context.Context, endpointID string) (Event, error) {
	e, err := s.Webhook(ctx, endpointID)
	if err != nil {
		return Event{}, err
	}
	var b [16]byte
	_, _ = rand.Read(b[:])
	data, _ := json.Marshal(map[string]string{"endpointId": e.ID,
		"message": "A test delivery from the invoicing platform: this endpoint receives and can verify its webhooks."})
	ev := Event{ID: "evt_" + idEncoding.EncodeToString(b[:]), Type: TestType, Mode: e.Mode, CompanyID: e.CompanyID,
		ResourceID: e.ID, Time: s.now().UTC().Truncate(time.Millisecond), Data: data}
	if _, _, err := s.q.enqueue(ctx, nil, move{}, []queued{{ev: ev, eps: []string{e.ID}}}); err != nil {
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
