package events

import (
	"context"
	"encoding/json"
	"strconv"
	"time"

	"github.com/invoicing-ao/gateway/invoicing"
)

// Source is one mode's platform database, as the detector reads it
// (backend.Changes, a Store's change feed). Each method returns resources
// exactly as the API's GET answers them.
type Source interface {
	// DatabaseNow is the database's clock: the changes' times are its.
	DatabaseNow(ctx context.Context) (time.Time, error)
	// InFlight is the database's clock and what it shows of the
	// transactions open then (invoicing.Horizon), the clock read first.
	InFlight(ctx context.Context) (invoicing.Horizon, error)
	// ChangedInvoices reads documents by their last change (updated_at).
	ChangedInvoices(ctx context.Context, q invoicing.ChangeQuery) ([]invoicing.Changed[invoicing.Invoice], error)
	// ChangedClients reads live clients by their last change.
	ChangedClients(ctx context.Context, q invoicing.ChangeQuery) ([]invoicing.Changed[invoicing.Client], error)
	// ChangedTransmissions reads documents by the last change of their AGT
	// submissions (sent, or answered), which does not move updated_at.
	ChangedTransmissions(ctx context.Context, q invoicing.ChangeQuery) ([]invoicing.Changed[invoicing.Invoice], error)
	// OverdueInvoices reads the issued FT and ND whose due date is in a
	// range of days.
	OverdueInvoices(ctx context.Context, q invoicing.OverdueQuery) ([]invoicing.Changed[invoicing.Invoice], error)
}

// luanda is the platform's business day's zone: a due date passes at
// midnight there.
var luanda = func() *time.Location {
	if loc, err := time.LoadLocation("Africa/Luanda"); err == nil {
		return loc
	}
	return time.FixedZone("WAT", 3600) // Luanda keeps UTC+1 all year
}()

// overdueAt is when an invoice due on date (YYYY-MM-DD) became overdue: the
// Luanda midnight that began the next day.
func overdueAt(date string) (time.Time, bool) {
	d, err := time.ParseInLocation("2006-01-02", date, luanda)
	if err != nil {
		return time.Time{}, false
	}
	return d.AddDate(0, 0, 1), true
}

// invoiceEvents are the events an invoice's change makes: its state
// (issued when its issue is recent, paid, cancelled, overdue), each
// identified by what it is, so that reading the change again gives the same
// ids. recent is the earliest issue time still reported as an issue.
func invoiceEvents(m invoicing.Mode, c invoicing.Changed[invoicing.Invoice], recent time.Time) []Event {
	inv := &c.Resource
	var out []Event
	add := func(t Type, disc string, at time.Time) {
		out = append(out, Event{ID: eventID(m, c.CompanyID, t, inv.ID, disc), Type: t, Mode: m, CompanyID: c.CompanyID, ResourceID: inv.ID, Time: at.UTC()})
	}
	if inv.IssuedAt != nil && !inv.IssuedAt.Before(recent) {
		add(InvoiceIssued, "", inv.IssuedAt.Time)
	}
	switch inv.Status {
	case "PAID":
		add(InvoicePaid, "", inv.UpdatedAt.Time)
	case "CANCELLED":
		add(InvoiceCancelled, "", inv.UpdatedAt.Time)
	case "OVERDUE":
		if e, ok := overdueEvent(m, c); ok {
			out = append(out, e)
		}
	}
	return out
}

// overdueEvent is an overdue invoice's event, one per due date: at the
// midnight its due date passed, or at its change if that came later (a due
// date moved into the past).
func overdueEvent(m invoicing.Mode, c invoicing.Changed[invoicing.Invoice]) (Event, bool) {
	inv := &c.Resource
	if inv.DueDate == nil {
		return Event{}, false
	}
	at, ok := overdueAt(*inv.DueDate)
	if !ok {
		return Event{}, false
	}
	if inv.UpdatedAt.After(at) {
		at = inv.UpdatedAt.Time
	}
	return Event{ID: eventID(m, c.CompanyID, InvoiceOverdue, inv.ID, *inv.DueDate), Type: InvoiceOverdue, Mode: m,
		CompanyID: c.CompanyID, ResourceID: inv.ID, Time: at.UTC()}, true
}

// transmissionEvent is the event of a change of an invoice's AGT result:
// one per submission and status.
func transmissionEvent(m invoicing.Mode, c invoicing.Changed[invoicing.Invoice]) (Event, bool) {
	tr := c.Resource.Transmission
	if tr == nil || tr.SubmittedAt == nil {
		return Event{}, false // never sent (a PF, or not yet)
	}
	disc := strconv.FormatInt(tr.SubmittedAt.UnixMicro(), 10) + "/" + tr.Status
	return Event{ID: eventID(m, c.CompanyID, InvoiceTransmission, c.Resource.ID, disc), Type: InvoiceTransmission, Mode: m,
		CompanyID: c.CompanyID, ResourceID: c.Resource.ID, Time: c.At.UTC()}, true
}

// clientEvents are a client change's events: created (when its creation is
// recent) and updated (once per update time).
func clientEvents(m invoicing.Mode, c invoicing.Changed[invoicing.Client], recent time.Time) []Event {
	cl := &c.Resource
	var out []Event
	if !cl.CreatedAt.Before(recent) {
		out = append(out, Event{ID: eventID(m, c.CompanyID, ClientCreated, cl.ID, ""), Type: ClientCreated, Mode: m,
			CompanyID: c.CompanyID, ResourceID: cl.ID, Time: cl.CreatedAt.UTC()})
	}
	if cl.UpdatedAt.After(cl.CreatedAt.Time) {
		out = append(out, Event{ID: eventID(m, c.CompanyID, ClientUpdated, cl.ID, strconv.FormatInt(cl.UpdatedAt.UnixMicro(), 10)),
			Type: ClientUpdated, Mode: m, CompanyID: c.CompanyID, ResourceID: cl.ID, Time: cl.UpdatedAt.UTC()})
	}
	return out
}

// withData sets each event's data to the resource's JSON (encoding/json
// writes the API's resources byte for byte as the API does).
func withData(evs []Event, resource any) ([]Event, error) {
	if len(evs) == 0 {
		return evs, nil
	}
	b, err := json.Marshal(resource)
	if err != nil {
		return nil, err
	}
	for i := range evs {
		evs[i].Data = b
	}
	return evs, nil
}
