// Package backend is the adapter to the invoicing platform's database. It turns
// the platform's tables (schema in schema/postgres.sql, a copy of the platform's
// contract) into the public API's resources — clients, invoices, pages — and
// inserts new clients. It knows nothing of HTTP, keys or rate limits: callers pick
// one Store per key mode (live or sandbox database) and get resources or one of
// the sentinel errors below.
package backend

import (
	"encoding/json"
	"errors"
	"time"
)

// Sentinel errors. Every error a Store returns either is one of these (compare
// with errors.Is) or is an unexpected internal fault.
var (
	// ErrNotFound: no such resource in this company (also for another
	// company's id and for ids that are not UUIDs).
	ErrNotFound = errors.New("backend: not found")
	// ErrNIFConflict: the company already has a live client with this NIF.
	ErrNIFConflict = errors.New("backend: a client with this NIF already exists")
	// ErrUnavailable: the database could not be reached or did not answer in
	// time. Wrapped together with the cause.
	ErrUnavailable = errors.New("backend: database unavailable")
	// ErrInvalid: a filter or page outside the documented ranges. The gateway
	// validates first; this guards the adapter's own contract.
	ErrInvalid = errors.New("backend: invalid argument")
)

// Client is the API's client resource (API document 2.1).
type Client struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	NIF       *string   `json:"nif"`
	Email     *string   `json:"email"`
	Phone     *string   `json:"phone"`
	Address   *string   `json:"address"`
	Type      *string   `json:"type"` // COMPANY, INDIVIDUAL or null
	CreatedAt Timestamp `json:"createdAt"`
}

// NewClient is the input of CreateClient, already validated by the caller.
// The adapter normalizes NIF (spaces removed, upper case) and an Angolan phone
// to +244XXXXXXXXX before storing.
type NewClient struct {
	Name    string
	NIF     *string
	Email   *string
	Phone   *string
	Address *string
	Type    *string // COMPANY or INDIVIDUAL
}

// Invoice is the API's invoice resource (API document 2.2). Transmission is set
// only by GetInvoice.
type Invoice struct {
	ID           string          `json:"id"`
	Number       string          `json:"number"`
	Type         string          `json:"type"`
	Status       string          `json:"status"`
	TotalAmount  Decimal         `json:"totalAmount"`
	Currency     string          `json:"currency"`
	IssuedAt     *Timestamp      `json:"issuedAt"`
	DueDate      *string         `json:"dueDate"` // YYYY-MM-DD
	Customer     InvoiceCustomer `json:"customer"`
	Items        []InvoiceItem   `json:"items"`
	Transmission *Transmission   `json:"transmission,omitempty"`
}

// InvoiceCustomer is the customer snapshot taken when the document was issued.
type InvoiceCustomer struct {
	ID   *string `json:"id"` // null for an anonymous final consumer
	Name string  `json:"name"`
	NIF  *string `json:"nif"`
}

// InvoiceItem is one document line, in line order.
type InvoiceItem struct {
	Description string  `json:"description"`
	Quantity    Decimal `json:"quantity"`
	UnitPrice   Decimal `json:"unitPrice"`
	Total       Decimal `json:"total"`
}

// Transmission is the state of the document's newest AGT submission.
type Transmission struct {
	Status      string              `json:"status"` // NOT_APPLICABLE, NOT_SENT, PENDING, VALID, INVALID
	RequestID   *string             `json:"requestId"`
	SubmittedAt *Timestamp          `json:"submittedAt"`
	CheckedAt   *Timestamp          `json:"checkedAt"`
	Errors      []TransmissionError `json:"errors"` // empty array, never null
}

// TransmissionError is one of AGT's reasons for rejecting a document.
type TransmissionError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Page is the API's list envelope (API document 2.3).
type Page[T any] struct {
	Data     []T   `json:"data"` // empty array, never null
	Total    int64 `json:"total"`
	Page     int   `json:"page"`
	PageSize int   `json:"pageSize"`
}

// InvoiceFilter selects invoices. Zero values mean "no filter"; Page and
// PageSize must be set (1.., 1..100).
type InvoiceFilter struct {
	Status   string // DRAFT, ISSUED, PAID, CANCELLED, OVERDUE (derived status)
	Type     string // FT, FR, FS, NC, ND, PF
	From, To string // inclusive YYYY-MM-DD on the issue date in Africa/Luanda
	Page     int
	PageSize int
}

// ClientFilter selects clients.
type ClientFilter struct {
	Search   string // case-insensitive substring of the name, or the NIF
	Page     int
	PageSize int
}

// Company is what the gateway needs to know of a platform company.
type Company struct {
	ID     string
	Name   string
	Status string // "active" or "suspended"
}

// Timestamp is an instant rendered as UTC ISO 8601 with milliseconds and Z.
type Timestamp struct{ time.Time }

// MarshalJSON renders 2026-03-01T09:15:02.120Z.
func (t Timestamp) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 26)
	b = append(b, '"')
	b = t.UTC().AppendFormat(b, "2006-01-02T15:04:05.000Z")
	return append(b, '"'), nil
}

// Decimal is an exact decimal number kept as its canonical text (for example
// "12345678901234.56"), written to JSON as a number without ever passing
// through binary floating point.
type Decimal string

// MarshalJSON writes the number's text as is.
func (d Decimal) MarshalJSON() ([]byte, error) {
	if d == "" {
		return []byte("null"), nil
	}
	return []byte(d), nil
}

// UnmarshalJSON parses the rendering of MarshalJSON (for clients and tests).
func (t *Timestamp) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return err
	}
	t.Time = v
	return nil
}

// UnmarshalJSON keeps a JSON number's text exactly (null becomes "").
func (d *Decimal) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*d = ""
		return nil
	}
	var n json.Number
	if err := json.Unmarshal(b, &n); err != nil {
		return err
	}
	*d = Decimal(n)
	return nil
}
