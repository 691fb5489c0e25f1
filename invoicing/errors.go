package invoicing

import (
	"errors"
	"fmt"
	"sort"
	"sync"
)

// Kind is what sort of failure an error is: all that the HTTP layer needs to
// choose a status. Adapters give every error a caller may see a kind and a
// stable code (Define), so that adding such an error to an adapter changes
// nothing in the HTTP layer: it answers with the kind's status and the
// error's code, title and detail.
type Kind uint8

// The kinds. The zero Kind is Internal: an error that never said what it is
// is a fault of ours, and its text is never shown.
const (
	Internal        Kind = iota // a fault of the gateway's: nothing the caller can change
	Invalid                     // the request is malformed or out of range
	Unauthenticated             // the caller's credentials are missing, unknown or expired
	Forbidden                   // the caller is known but may not do this
	NotFound                    // no such resource (for this caller)
	Conflict                    // the request collides with what exists
	Unprocessable               // well-formed, but names something that cannot be used
	Limited                     // too many requests: retry later
	Unavailable                 // a dependency cannot answer now: retry later
)

var kindNames = [...]string{"internal", "invalid", "unauthenticated", "forbidden", "not found", "conflict", "unprocessable", "limited", "unavailable"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Error is an error an adapter returns to its callers, with what they need
// to answer for it. Compare with errors.Is against the adapter's variable
// (each is defined once, by Define); wrap it with fmt.Errorf("%w") to add
// context.
type Error struct {
	Kind Kind
	// Code is stable and machine-readable: the API's problem code, e.g.
	// "not_found". Several errors may share a code if they share its kind
	// and title.
	Code string
	// Title is the code's short summary, the same for every error of the
	// code ("Resource not found").
	Title string
	// Detail is what the caller is told. Empty means that the error's text,
	// as returned with whatever it was wrapped in, is meant for the caller:
	// validation errors that say what was wrong with the input.
	Detail string
	// Message is the error's text (Error), for logs.
	Message string
}

func (e *Error) Error() string { return e.Message }

// FieldError is an input refused, named: Field as the caller gave it
// ("rate", "url") and Message what it must be, in the caller's words ("must
// be from 0.001 to 100000 requests per second"), never an adapter's
// internals. It is the defined error Err (its kind, code and title): the API
// answers it with one sentence naming the field, and the field in its
// problem's list of errors.
type FieldError struct {
	Err     error // a defined error: Define's result, or one wrapping it
	Field   string
	Message string
}

func (e *FieldError) Error() string { return e.Err.Error() + ": " + e.Field + " " + e.Message }

func (e *FieldError) Unwrap() error { return e.Err }

// InvalidField is the input field refused as def, with why it was:
// "must be ...", formatted as fmt.Sprintf does.
func InvalidField(def error, field, format string, a ...any) error {
	return &FieldError{Err: def, Field: field, Message: fmt.Sprintf(format, a...)}
}

// KindOf is the kind of the first *Error in err's chain; Internal when there
// is none.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return Internal
}

// CodeInfo is one code of the registry: its kind and title.
type CodeInfo struct {
	Code  string
	Kind  Kind
	Title string
}

var registry = struct {
	sync.RWMutex
	codes map[string]CodeInfo
}{codes: map[string]CodeInfo{}}

// Define makes an adapter's error and records its code, so that the API's
// list of codes (the errors guide, the OpenAPI document's enum) is complete
// without a list kept by hand. It panics when the code is empty, its kind is
// Internal, or the code was defined before with another kind or title: those
// are mistakes of the program, found when it starts.
func Define(e Error) *Error {
	if e.Code == "" || e.Kind == Internal || e.Title == "" {
		panic(fmt.Sprintf("invoicing.Define: %q needs a code, a kind other than Internal and a title", e.Message))
	}
	registry.Lock()
	defer registry.Unlock()
	info := CodeInfo{e.Code, e.Kind, e.Title}
	if had, ok := registry.codes[e.Code]; ok && had != info {
		panic(fmt.Sprintf("invoicing.Define: code %q defined as %v %q and again as %v %q", e.Code, had.Kind, had.Title, e.Kind, e.Title))
	}
	registry.codes[e.Code] = info
	return &e
}

// LookupCode is a defined code's kind and title.
func LookupCode(code string) (CodeInfo, bool) {
	registry.RLock()
	defer registry.RUnlock()
	info, ok := registry.codes[code]
	return info, ok
}

// Codes is every defined code, sorted by code.
func Codes() []CodeInfo {
	registry.RLock()
	defer registry.RUnlock()
	out := make([]CodeInfo, 0, len(registry.codes))
	for _, c := range registry.codes {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Code < out[j].Code })
	return out
}

// An adapter's error may carry what the caller is told beyond its code, or
// what the HTTP layer needs to answer a retry, through the small interfaces
// below: the HTTP layer reads them with errors.As and never names the
// adapter's own types, so such an error needs no edit in it either.

// ClientConflict is an error refusing a create because one of the caller's
// company's clients holds what it asked for (the NIF). ExistingClientID is
// that client's id: the caller's own data, told so that it can use that
// client instead of searching for it. An error that cannot name the client
// does not implement it (or answers "").
type ClientConflict interface {
	error
	ExistingClientID() string
}

// ClientExists is an error refusing a create that was given its client's id
// (NewClient.ID) because a client of the caller's company has that id
// already: an earlier attempt of the same create may have made it.
// ExistingClient is that client as it is now, so that a retry can be
// answered with the client its first attempt made.
type ClientExists interface {
	error
	ExistingClient() Client
}
