// Package backend is the adapter to the invoicing platform's database. It turns
// the platform's tables (schema in schema/postgres.sql, a copy of the platform's
// contract) into the public API's resources — clients, invoices, pages — and
// inserts new clients. It knows nothing of HTTP, keys or rate limits: callers pick
// one Store per key mode (live or sandbox database) and get resources or one of
// the sentinel errors below.
//
// A Store has two readers over one set of connections. The Store itself
// serves requests: the public API's reads and its one write, the admin's
// company search, and the connections' state. Its Changes serve the events'
// detector: what changed, and the transactions in flight, read on the
// primary in long background pages across companies. They are apart
// because their rules differ (replica or primary, a request's deadline or
// a page's) and so do their callers: the gateway's Store interface never
// sees the detector's methods. Reads and the write stay one type: they
// share the call's layers (ids, breaker, deadline, connection choice, in
// that order: store.go) and read-your-writes.
package backend

import (
	"errors"

	"github.com/invoicing-ao/gateway/invoicing"
)

// Sentinel errors. Every error a Store returns either is one of these (compare
// with errors.Is) or is an unexpected internal fault.
var (
	// ErrNotFound: no such resource in this company (also for another
	// company's id and for ids that are not UUIDs).
	ErrNotFound = invoicing.Define(invoicing.Error{Kind: invoicing.NotFound, Code: "not_found", Title: "Resource not found", Detail: "No such resource.", Message: "backend: not found"})
	// ErrNIFConflict: the company already has a live client with this NIF.
	ErrNIFConflict = invoicing.Define(invoicing.Error{Kind: invoicing.Conflict, Code: "nif_conflict", Title: "NIF already registered", Detail: "A client with this NIF already exists in the company.", Message: "backend: a client with this NIF already exists"})
	// ErrUnavailable: the database could not be reached or did not answer in
	// time. Wrapped together with the cause.
	ErrUnavailable = invoicing.Define(invoicing.Error{Kind: invoicing.Unavailable, Code: "database_unavailable", Title: "Database unavailable", Detail: "The database is unavailable; retry later.", Message: "backend: database unavailable"})
	// ErrClientExists: CreateClient was given an id (NewClient.ID) that a
	// client of the company has already. The error is a *ClientExistsError,
	// which holds that client as it is now.
	ErrClientExists = errors.New("backend: a client with this id exists")
	// ErrInvalid: a filter or page outside the documented ranges. The gateway
	// validates first; this guards the adapter's own contract.
	ErrInvalid = invoicing.Define(invoicing.Error{Kind: invoicing.Invalid, Code: "invalid_parameter", Title: "Invalid query parameter", Detail: "Invalid parameter.", Message: "backend: invalid argument"})
)

// ClientExistsError is ErrClientExists with the client that has the id.
// It is an invoicing.ClientExists, so that callers need not name this type.
type ClientExistsError struct{ Client invoicing.Client }

func (e *ClientExistsError) Error() string { return ErrClientExists.Error() + ": " + e.Client.ID }

// Is makes errors.Is(err, ErrClientExists) true.
func (e *ClientExistsError) Is(target error) bool { return target == ErrClientExists }

// ExistingClient is the client that has the id (invoicing.ClientExists).
func (e *ClientExistsError) ExistingClient() invoicing.Client { return e.Client }

// NIFConflictError is ErrNIFConflict (errors.Is, and its kind and code to
// errors.As) with the id of the company's live client that has the NIF:
// the caller's own data, so that it can use that client instead of
// searching for it. It is an invoicing.ClientConflict, which is how the
// HTTP layer tells the caller that id without naming this type.
type NIFConflictError struct{ ClientID string }

func (e *NIFConflictError) Error() string { return ErrNIFConflict.Error() + ": client " + e.ClientID }

func (e *NIFConflictError) Unwrap() error { return ErrNIFConflict }

// ExistingClientID is the id of the client that has the NIF
// (invoicing.ClientConflict).
func (e *NIFConflictError) ExistingClientID() string { return e.ClientID }

// errIDTaken is a driver's "duplicate primary key" on customers, turned into
// a ClientExistsError by insertClient.
var errIDTaken = errors.New("backend: customer id taken")
