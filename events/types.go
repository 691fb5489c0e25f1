package events

import (
	"crypto/sha256"
	"encoding/base32"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/invoicing-ao/gateway/invoicing"
)

// Type is an event's type, as the webhook's body names it.
type Type string

// The event types. Each invoice event carries the invoice as GET
// /invoices/{id} answers it; each client event the client as GET
// /clients/{id} answers it.
const (
	InvoiceIssued       Type = "invoice.issued"
	InvoicePaid         Type = "invoice.paid"
	InvoiceCancelled    Type = "invoice.cancelled"
	InvoiceOverdue      Type = "invoice.overdue"
	InvoiceTransmission Type = "invoice.transmission.updated"
	ClientCreated       Type = "client.created"
	ClientUpdated       Type = "client.updated"
)

// Types lists every event type, in the order the documentation gives them.
var Types = []Type{InvoiceIssued, InvoicePaid, InvoiceCancelled, InvoiceOverdue, InvoiceTransmission, ClientCreated, ClientUpdated}

// ParseTypes checks a list of event types: each known, none twice. An empty
// list means every type, now and to come.
func ParseTypes(names []string) ([]Type, error) {
	out := make([]Type, 0, len(names))
	for _, n := range names {
		t := Type(strings.TrimSpace(n))
		if !slices.Contains(Types, t) {
			return nil, invoicing.InvalidField(ErrInvalidWebhook, "types", "must be among %s: %q is not an event type", typeList(), invoicing.Clip(n))
		}
		if slices.Contains(out, t) {
			return nil, invoicing.InvalidField(ErrInvalidWebhook, "types", "must name each type once: %s is given twice", t)
		}
		out = append(out, t)
	}
	return out, nil
}

func typeList() string {
	s := make([]string, len(Types))
	for i, t := range Types {
		s[i] = string(t)
	}
	return strings.Join(s, ", ")
}

// Event is one change, ready to be delivered.
type Event struct {
	ID         string          `json:"id"` // evt_ and 26 base32 characters; see eventID
	Type       Type            `json:"type"`
	Mode       invoicing.Mode  `json:"mode"`
	CompanyID  string          `json:"companyId"`
	ResourceID string          `json:"resourceId"`
	Time       time.Time       `json:"time"` // when the change happened
	Data       json.RawMessage `json:"data"` // the resource, as the API's GET answers it

	cause trace.SpanContext // the detection's span, which deliveries link to (observe.go)
	// commit is the earliest its change can have committed, as detection
	// knows it (this process's clock; zero: unknown), which the latency
	// metrics measure from (metrics.go).
	commit time.Time
}

// body is the webhook's JSON body: type, timestamp and data, as Standard
// Webhooks' payload structure has them, and whose the event is, companyId
// and mode, beside them at the top level (where the specification allows
// metadata): data is the resource exactly as the API's GET answers it, so
// it cannot carry them, and a header would not be signed. A receiver that
// serves several companies from one URL routes by them. The body is built
// at each attempt from the event as queued, which has always held its
// company and mode, so events queued before these fields existed carry them
// too.
func (e *Event) body() ([]byte, error) {
	return json.Marshal(struct {
		Type      Type                `json:"type"`
		Timestamp invoicing.Timestamp `json:"timestamp"`
		CompanyID string              `json:"companyId"`
		Mode      invoicing.Mode      `json:"mode"`
		Data      json.RawMessage     `json:"data"`
	}{e.Type, invoicing.Timestamp{Time: e.Time}, e.CompanyID, e.Mode, e.Data})
}

var idEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// eventID names a change: a hash of what it is, never of when it was found,
// so that finding it again (a sweep, a restart, a lost Redis) gives the same
// id, which receivers use to drop duplicates. discriminator tells two changes
// of the same type of one resource apart (a due date, a client's update
// time, a submission); it is empty for the changes a resource makes once
// (issued, paid, cancelled, created).
func eventID(mode invoicing.Mode, company string, t Type, resource, discriminator string) string {
	h := sha256.Sum256([]byte(string(mode) + "\x00" + company + "\x00" + string(t) + "\x00" + resource + "\x00" + discriminator))
	return "evt_" + idEncoding.EncodeToString(h[:16])
}
