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
