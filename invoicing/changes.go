package invoicing

import "time"

// ChangeQuery reads one page of what changed in a time window: the rows of
// Companies whose change time is in [From, To), after the position After
// (nil: from From), in (time, id) order, at most Limit of them. The events'
// detector reads the database with it.
type ChangeQuery struct {
	Companies []string // canonical ids; empty reads nothing, unless All
	// All reads every company's rows, Companies ignored: the events feed
	// records every company's events, whether or not it has endpoints.
	All      bool
	From, To time.Time
	After    *Position
	Limit    int
}

// OverdueQuery reads one page of the issued invoices that can be overdue
// (FT and ND) of Companies whose due date is in [From, To) (YYYY-MM-DD), in
// id order after AfterID, at most Limit.
type OverdueQuery struct {
	Companies []string
	All       bool // as ChangeQuery's
	From, To  string
	AfterID   string
	Limit     int
}

// Changed is a resource of a company as it is now, found at a position of a
// change stream: At is the change's time (the stream's order, with the
// resource's id).
type Changed[T any] struct {
	CompanyID string
	At        time.Time
	Resource  T
}

// A Horizon is what a database says, at one instant, of the transactions
// that may still commit changes: its clock, and the transactions open then.
// The events' detector reads up to where every transaction that could still
// write an earlier change time has ended.
type Horizon struct {
	Now   time.Time // the database's clock, read before the transactions
	Sight Sight
	Open  []OpenTransaction
}

// Sight is how much a database shows of its open transactions.
type Sight int

const (
	// SightClock: nothing but its clock. A database with one writer whose
	// commits follow their change times closely (SQLite).
	SightClock Sight = iota
	// SightWriters: the transactions that have written (they hold a
	// transaction id), without their start; the reader's own role's with
	// it. PostgreSQL to a role without pg_read_all_stats (pg_monitor).
	SightWriters
	// SightAll: every open transaction and its start. PostgreSQL to a role
	// with pg_read_all_stats (part of pg_monitor), or a superuser.
	SightAll
)

// An OpenTransaction is a transaction in progress.
type OpenTransaction struct {
	// ID names it, the same in every reading while it is open.
	ID string
	// Start is its start, the time its now() gives its rows; zero when the
	// database does not show it (SightWriters).
	Start time.Time
}
