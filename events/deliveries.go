package events

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/invoicing-ao/gateway/invoicing"
)

// Delivery is one event's delivery to one endpoint, as the delivery log
// shows it.
type Delivery struct {
	EventID    string `json:"eventId"`
	Type       Type   `json:"type"`
	ResourceID string `json:"resourceId"`
	// State is pending (waiting for its next attempt, or being made),
	// delivered, failed (every attempt of the schedule failed) or expired
	// (older than the retention before it could be made).
	State         string     `json:"state"`
	Attempts      int        `json:"attempts"`
	QueuedAt      time.Time  `json:"queuedAt"`
	NextAttemptAt *time.Time `json:"nextAttemptAt"`
	DoneAt        *time.Time `json:"doneAt"`
	Log           []Attempt  `json:"log"` // the newest attempts, oldest first
}

// MaxDeliveriesPage bounds a page of the delivery log.
const MaxDeliveriesPage = 100

// DeliveryQuery selects a page of an endpoint's delivery log.
type DeliveryQuery struct {
	Limit  int    // 1 to MaxDeliveriesPage; zero means 20
	Cursor string // "" for the first page; else a page's Next
	State  string // "" for every state; else pending, delivered, failed or expired
	Type   Type   // "" for every type
}

// DeliveryStates are the states of a delivery.
var DeliveryStates = []string{"pending", "delivered", "failed", "expired"}

// Deliveries reads an endpoint's delivery log, newest first: up to q.Limit
// deliveries queued before q.Cursor that match q's state and type, and the
// cursor of the next page ("" when this is the last).
func (s *Service) Deliveries(ctx context.Context, endpointID string, q DeliveryQuery) ([]Delivery, string, error) {
	if q.State != "" && !slices.Contains(DeliveryStates, q.State) {
		return nil, "", invoicing.InvalidField(ErrInvalidEndpoint, "state", "must be one of %s", strings.Join(DeliveryStates, ", "))
	}
	if q.Type != "" && q.Type != TestType && !slices.Contains(Types, q.Type) {
		return nil, "", invoicing.InvalidField(ErrInvalidEndpoint, "type", "must be an event type such as invoice.paid: %q is not one", invoicing.Clip(string(q.Type)))
	}
	if _, err := s.Endpoint(ctx, endpointID); err != nil {
		return nil, "", err
	}
	limit := q.Limit
	if limit <= 0 {
		limit = 20
	}
	limit = min(limit, MaxDeliveriesPage)
	var out []Delivery
	cursor := q.Cursor
	// Read the log in batches until the page is full, the log ends, or a
	// bounded number of entries was read (a filter that matches little
	// returns a short page and a cursor to go on).
	for read := 0; read < 20*MaxDeliveriesPage; {
		batch, next, err := s.logPage(ctx, endpointID, 2*limit, cursor)
		if err != nil {
			return nil, "", err
		}
		for i, id := range batch {
			read++
			d, ok, err := s.delivery(ctx, endpointID, id.id)
			if err != nil {
				return nil, "", err
			}
			if !ok || (q.State != "" && d.State != q.State) || (q.Type != "" && d.Type != q.Type) {
				continue
			}
			out = append(out, d)
			if len(out) == limit {
				if i == len(batch)-1 {
					return out, next, nil
				}
				return out, batch[i].cursor, nil
			}
		}
		if next == "" {
			return out, "", nil
		}
		cursor = next
	}
	return out, cursor, nil
}

// logEntry is one entry of an endpoint's log and the cursor just past it.
type logEntry struct{ id, cursor string }

// logPage reads up to n entries of an endpoint's log before cursor, newest
// first, and the cursor after the last ("" when the log ends there).
func (s *Service) logPage(ctx context.Context, endpointID string, n int, cursor string) ([]logEntry, string, error) {
	maxScore, skip := "+inf", ""
	if ms, id, ok := strings.Cut(cursor, ":"); ok {
		maxScore, skip = ms, id
	}
	// Entries queued in the same millisecond share a score: read past the
	// cursor's own entry, and enough to skip it.
	zs, err := s.rdb.ZRevRangeByScoreWithScores(ctx, s.l.log(endpointID), &redis.ZRangeBy{Max: maxScore, Min: "-inf", Count: int64(n + 50)}).Result()
	if err != nil {
		return nil, "", unavailable(err)
	}
	if skip != "" {
		for i, z := range zs {
			if z.Member.(string) == skip {
				zs = zs[i+1:]
				break
			}
		}
	}
	more := len(zs) > n
	if more {
		zs = zs[:n]
	}
	out := make([]logEntry, len(zs))
	for i, z := range zs {
		id := z.Member.(string)
		out[i] = logEntry{id: id, cursor: strconv.FormatInt(int64(z.Score), 10) + ":" + id}
	}
	next := ""
	if more && len(out) > 0 {
		next = out[len(out)-1].cursor
	}
	return out, next, nil
}

// Delivery reads one delivery of the log.
func (s *Service) Delivery(ctx context.Context, endpointID, eventID string) (Delivery, error) {
	d, ok, err := s.delivery(ctx, endpointID, eventID)
	if err == nil && !ok {
		err = ErrNotFound
	}
	return d, err
}

func (s *Service) delivery(ctx context.Context, endpointID, eventID string) (Delivery, bool, error) {
	pipe := s.rdb.Pipeline()
	h := pipe.HGetAll(ctx, s.l.delivery(endpointID, eventID))
	a := pipe.LRange(ctx, s.l.attempts(endpointID, eventID), 0, -1)
	if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
		return Delivery{}, false, unavailable(err)
	}
	f := h.Val()
	if len(f) == 0 {
		return Delivery{}, false, nil
	}
	n, _ := strconv.Atoi(f["n"])
	d := Delivery{EventID: eventID, Type: Type(f["ty"]), ResourceID: f["rid"], State: f["st"], Attempts: n,
		NextAttemptAt: msTime(f["nx"]), DoneAt: msTime(f["done"]), Log: []Attempt{}}
	if q := msTime(f["at"]); q != nil {
		d.QueuedAt = *q
	}
	for _, raw := range a.Val() {
		var at Attempt
		if json.Unmarshal([]byte(raw), &at) == nil {
			d.Log = append(d.Log, at)
		}
	}
	return d, true, nil
}
