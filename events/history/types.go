package history

import (
	"time"

	"github.com/invoicing-ao/gateway/invoicing"
)

// Event is an event to record: whose it is, its type and resource, its
// webhook body (a JSON object, sent as it is), the detection span that
// found it (a W3C traceparent, "" for none) and the endpoints it is routed
// to.
type Event struct {
	ID         string
	CompanyID  string // canonical UUID
	Mode       invoicing.Mode
	Type       string
	ResourceID string
	Body       []byte
	Cause      string
	Endpoints  []string
}

// Move is a detection step's move of its watermark, from Old ("" when it
// has none) to Next. A Move without Stream moves nothing (the sweep's).
type Move struct {
	Mode   invoicing.Mode
	Stream string
	Old    string
	Next   string
}

// Batch is what a detection step records.
type Batch struct {
	Move   Move
	Events []Event
}

// Queued is a delivery to push to the queue: whose, when it was queued and
// when it is due (ms).
type Queued struct {
	CompanyID  string
	EndpointID string
	EventID    string
	QueuedMs   int64
	DueMs      int64
}

// Recorded is what Record did: nothing when Moved (another detector moved
// the watermark first); else, per event of the batch, whether it was new
// (recorded in its feed now), and the deliveries it queued.
type Recorded struct {
	Moved      bool
	New        []bool
	Deliveries []Queued
}

// FeedRow is one event of a feed page: its position, id and body.
type FeedRow struct {
	Position invoicing.FeedPosition
	EventID  string
	Body     []byte
}

// FeedPage is a page of a feed. Next is where the next page starts, as
// invoicing.FeedPage's: oldest first it is never nil; newest first it is
// nil once the oldest event was reached.
type FeedPage struct {
	Rows    []FeedRow
	Next    *invoicing.FeedPosition
	HasMore bool
}

// DeliveryKey names a delivery: an event's to an endpoint of a company.
type DeliveryKey struct {
	CompanyID  string
	EndpointID string
	EventID    string
}

// Fetched is a delivery to make, as Fetch reads it.
type Fetched struct {
	DeliveryKey
	Found      bool // false: past the retention, or never queued
	Mode       invoicing.Mode
	Type       string
	ResourceID string
	State      string
	Attempts   int // made since it was (re)queued
	QueuedMs   int64
	Body       []byte
	Cause      string
}

// Attempt is one try at a delivery.
type Attempt struct {
	At       time.Time
	Status   int // the answer's status; 0 when none came
	Latency  float64
	Error    string
	Response string
}

// The states of a delivery.
const (
	Pending   = "pending" // waiting for its next attempt, or being made
	Delivered = "delivered"
	Failed    = "failed"  // every attempt of the schedule failed
	Expired   = "expired" // older than the retention before it could be made
)

// States are the states of a delivery.
var States = []string{Pending, Delivered, Failed, Expired}

// Outcome is how an attempt at a delivery ended: its new State, and Next
// when it is Pending (a retry's time). Attempt is nil when none was made
// (Expired). An Outcome without State logs its Attempt and changes nothing
// else (the delivery's lease was lost: another instance has it now).
type Outcome struct {
	DeliveryKey
	Attempt *Attempt
	State   string
	Next    time.Time
}

// Delivery is one delivery as the log shows it.
type Delivery struct {
	EventID       string
	Mode          invoicing.Mode
	Type          string
	ResourceID    string
	State         string
	Attempts      int
	QueuedAt      time.Time
	NextAttemptAt *time.Time
	DoneAt        *time.Time
	Log           []Attempt // the newest attempts, oldest first
}

// MaxLogPage bounds a page of the delivery log.
const MaxLogPage = 100

// LogQuery selects a page of an endpoint's delivery log.
type LogQuery struct {
	CompanyID  string
	EndpointID string
	Limit      int    // 1 to MaxLogPage; zero: 20
	Cursor     string // "" for the first page; else a page's Next ("ms:event id")
	State      string // "": every state
	Type       string // "": every type
}

// LogPage is a page of the delivery log; Next is "" when it is the last.
// A filter that matches little gives a short page (a page reads a bounded
// number of deliveries) and a cursor to go on.
type LogPage struct {
	Deliveries []Delivery
	Next       string
}

// RecoverQuery selects a page of an endpoint's deliveries to queue again.
type RecoverQuery struct {
	CompanyID  string
	EndpointID string
	Since      time.Time // queued at or after
	Cursor     string    // "" for the first page; else a page's Next
	Limit      int       // deliveries read; zero: 500
}

// Recovered is a page of Recover: the deliveries queued again, how many
// had failed and how many waited for a retry, and where the next page
// starts ("" when this was the last).
type Recovered struct {
	Queued  []Queued
	Failed  int
	Waiting int
	Next    string
}

// TestDelivery is a test delivery to queue: an event of its own, to one
// endpoint.
type TestDelivery struct {
	CompanyID  string
	Mode       invoicing.Mode
	EndpointID string
	EventID    string
	Type       string
	ResourceID string
	Body       []byte
	Cause      string
}

// Maintenance is what Maintain did: partitions made and dropped
// (PostgreSQL), rows deleted (SQLite). Busy is true when another instance
// was maintaining, and this call did nothing.
type Maintenance struct {
	Made    []string
	Dropped []string
	Deleted int64
	Busy    bool
}

// FeedSize is a feed's size: its events within the window, and when its
// last was recorded.
type FeedSize struct {
	CompanyID string
	Mode      invoicing.Mode
	Events    int64
	LastAt    time.Time
}

// Stats are the feeds' sizes.
type Stats struct {
	Feeds   int64
	Events  int64
	Largest []FeedSize
}
