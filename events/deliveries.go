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
	// CompanyID and Mode say whose the event is, as its body does: the
	// endpoint's, since an endpoint receives only its company's events of
	// its mode.
	CompanyID string         `json:"companyId"`
	Mode      invoicing.Mode `json:"mode"`
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
		return nil, "", invoicing.InvalidField(ErrInvalidWebhook, "state", "must be one of %s", strings.Join(DeliveryStates, ", "))
	}
	if q.Type != "" && q.Type != TestType && !slices.Contains(Types, q.Type) {
		return nil, "", invoicing.InvalidField(ErrInvalidWebhook, "type", "must be an event type such as invoice.paid: %q is not one", invoicing.Clip(string(q.Type)))
	}
	ep, err := s.Webhook(ctx, endpointID)
	if err != nil {
		return nil, "", err
	}
	if q.Cursor != "" && !ValidDeliveryCursor(q.Cursor) {
		return nil, "", invoicing.InvalidField(ErrInvalidWebhook, "cursor", "must be a page's next, as answered")
	}
	limit := q.Limit
	if limit <= 0 {
		limit = 20
	}
	limit = min(limit, MaxDeliveriesPage)
	out := make([]Delivery, 0, limit) // an empty page is [], not null
	cursor := q.Cursor
	// Read the log in batches until the page is full, the log ends, or a
	// bounded number of entries was read (a filter that matches little
	// returns a short page and a cursor to go on).
	batchSize := limit
	if q.State != "" || q.Type != "" {
		batchSize = 2 * limit
	}
	for read := 0; read < 20*MaxDeliveriesPage; {
		batch, next, err := s.logPage(ctx, endpointID, batchSize, cursor)
		if err != nil {
			return nil, "", err
		}
		ds, err := s.deliveries(ctx, endpointID, batch)
		if err != nil {
			return nil, "", err
		}
		for i, d := range ds {
			read++
			if d == nil || (q.State != "" && d.State != q.State) || (q.Type != "" && d.Type != q.Type) {
				continue
			}
			d.CompanyID, d.Mode = ep.CompanyID, ep.Mode
			out = append(out, *d)
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

// ValidDeliveryCursor tells a cursor of the delivery log (a page's next:
// the queueing time in ms and the event id of the page's last delivery)
// from anything else.
func ValidDeliveryCursor(c string) bool {
	ms, id, ok := strings.Cut(c, ":")
	if !ok || !validEventID(id) {
		return false
	}
	_, err := strconv.ParseUint(ms, 10, 63)
	return err == nil
}

// logEntry is one entry of an endpoint's log: its event, when it was
// queued (ms), and the cursor just past it.
type logEntry struct {
	id     string
	at     int64
	cursor string
}

// logPageScript reads up to ARGV[1] entries of a log (KEYS[1]), newest
// first, after the entry ARGV[3] queued at ARGV[2] (ms; both "" for the
// start), with their scores. Entries queued in the same millisecond share a
// score (a detection step queues thousands at once) and Redis orders them by
// id, so the page starts at the cursor's rank, not at its score: a page
// after any entry of any run of equal scores. A cursor whose entry is gone
// (trimmed past the retention, oldest first: the entries after it at its
// score went before it) goes on below its score.
var logPageScript = redis.NewScript(`
local n = tonumber(ARGV[1])
local start = 0
if ARGV[3] ~= '' then
  local score = redis.call('ZSCORE', KEYS[1], ARGV[3])
  if not score or tonumber(score) ~= tonumber(ARGV[2]) then
    return redis.call('ZREVRANGEBYSCORE', KEYS[1], '(' .. ARGV[2], '-inf', 'WITHSCORES', 'LIMIT', 0, n)
  end
  start = redis.call('ZREVRANK', KEYS[1], ARGV[3]) + 1
end
return redis.call('ZREVRANGE', KEYS[1], start, start + n - 1, 'WITHSCORES')`)

// logPage reads up to n entries of an endpoint's log after cursor, newest
// first, and the cursor after the last ("" when the log ends there).
func (s *Service) logPage(ctx context.Context, endpointID string, n int, cursor string) ([]logEntry, string, error) {
	score, after := "", ""
	if ms, id, ok := strings.Cut(cursor, ":"); ok {
		if _, err := strconv.ParseInt(ms, 10, 64); err == nil {
			score, after = ms, id
		}
	}
	res, err := logPageScript.Run(ctx, s.rdb, []string{s.l.log(endpointID)}, n+1, score, after).StringSlice()
	if err != nil {
		return nil, "", unavailable(err)
	}
	out := make([]logEntry, 0, len(res)/2)
	for i := 0; i+1 < len(res); i += 2 {
		ms, _ := strconv.ParseFloat(res[i+1], 64)
		out = append(out, logEntry{id: res[i], at: int64(ms), cursor: strconv.FormatInt(int64(ms), 10) + ":" + res[i]})
	}
	next := ""
	if len(out) > n {
		out = out[:n]
		next = out[n-1].cursor
	}
	return out, next, nil
}

// Delivery reads one delivery of the log.
func (s *Service) Delivery(ctx context.Context, endpointID, eventID string) (Delivery, error) {
	ep, err := s.Webhook(ctx, endpointID)
	if err != nil {
		return Delivery{}, err
	}
	d, ok, err := s.delivery(ctx, endpointID, eventID)
	if err == nil && !ok {
		err = ErrNotFound
	}
	if err != nil {
		return Delivery{}, err
	}
	d.CompanyID, d.Mode = ep.CompanyID, ep.Mode
	return d, nil
}

func (s *Service) delivery(ctx context.Context, endpointID, eventID string) (Delivery, bool, error) {
	ds, err := s.deliveries(ctx, endpointID, []logEntry{{id: eventID}})
	if err != nil || ds[0] == nil {
		return Delivery{}, false, err
	}
	return *ds[0], true, nil
}

// deliveries reads the deliveries of log entries in one round trip; nil for
// one whose record is gone (past the retention).
func (s *Service) deliveries(ctx context.Context, endpointID string, entries []logEntry) ([]*Delivery, error) {
	pipe := s.rdb.Pipeline()
	hs := make([]*redis.MapStringStringCmd, len(entries))
	as := make([]*redis.StringSliceCmd, len(entries))
	for i, e := range entries {
		hs[i] = pipe.HGetAll(ctx, s.l.delivery(endpointID, e.id))
		as[i] = pipe.LRange(ctx, s.l.attempts(endpointID, e.id), 0, -1)
	}
	if len(entries) > 0 {
		if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
			return nil, unavailable(err)
		}
	}
	out := make([]*Delivery, len(entries))
	for i, e := range entries {
		if f := hs[i].Val(); len(f) > 0 {
			d := deliveryOf(e.id, f, as[i].Val())
			out[i] = &d
		}
	}
	return out, nil
}

// deliveryOf is a delivery from its record and its attempts' JSON.
func deliveryOf(eventID string, f map[string]string, attempts []string) Delivery {
	n, _ := strconv.Atoi(f["n"])
	d := Delivery{EventID: eventID, Type: Type(f["ty"]), ResourceID: f["rid"], State: f["st"], Attempts: n,
		NextAttemptAt: msTime(f["nx"]), DoneAt: msTime(f["done"]), Log: []Attempt{}}
	if q := msTime(f["at"]); q != nil {
		d.QueuedAt = *q
	}
	for _, raw := range attempts {
		var at Attempt
		if json.Unmarshal([]byte(raw), &at) == nil {
			d.Log = append(d.Log, at)
		}
	}
	return d
}
