package backend

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/sony/gobreaker/v2"
)

// ErrCircuitOpen: the Store's circuit breaker is open, so the call was refused
// without touching the database. Errors carrying it also match ErrUnavailable
// and are a *CircuitOpenError, which says when the next probe is allowed.
var ErrCircuitOpen = errors.New("backend: circuit breaker open")

// CircuitOpenError is the error of a call refused by an open (or probing)
// breaker.
type CircuitOpenError struct {
	retryAfter time.Duration
}

func (e *CircuitOpenError) Error() string {
	return fmt.Sprintf("%v: %v, next probe in %v", ErrUnavailable, ErrCircuitOpen, e.retryAfter.Round(time.Millisecond))
}

// Is makes errors.Is match both ErrCircuitOpen and ErrUnavailable: callers
// that only know "unavailable" still answer correctly.
func (e *CircuitOpenError) Is(target error) bool {
	return target == ErrCircuitOpen || target == ErrUnavailable
}

// RetryAfter is how long until the breaker lets a probe through; zero while a
// probe is already in flight.
func (e *CircuitOpenError) RetryAfter() time.Duration { return e.retryAfter }

const (
	defaultBreakerFailures = 5
	defaultBreakerOpenFor  = 5 * time.Second
)

// breaker guards one database. It opens after a run of consecutive failures
// (ErrUnavailable: unreachable, refused, past the query deadline) and then
// refuses calls for openFor, after which one call at a time probes the
// database: a probe that gets an answer closes it, a failed one reopens it.
//
// What counts, and why:
//   - an answer, including "not found" and "NIF conflict", is a success: the
//     database works, the request was wrong;
//   - a call whose caller gave up (its own context canceled or past its own
//     deadline) is not counted: it says nothing of the database;
//   - ErrInvalid (raised by the adapter's own checks, never by the database)
//     and unexpected errors (an SQL or mapping error: the database answered,
//     not as expected) are not counted either;
//   - checks that fail before any query (a malformed id) never reach it.
//
// Ping does not go through it: readiness must report the database as it is,
// not as the breaker last saw it.
type breaker struct {
	cb        *gobreaker.CircuitBreaker[struct{}]
	openFor   time.Duration
	openUntil atomic.Int64 // unix nanoseconds; set when the breaker opens
}

// errCallerGone marks, for the breaker only, a failure the caller caused by
// leaving; run unwraps it before returning.
type errCallerGone struct{ err error }

func (e errCallerGone) Error() string { return e.err.Error() }

func newBreaker(cfg Config) *breaker {
	failures := cfg.BreakerFailures
	if failures <= 0 {
		failures = defaultBreakerFailures
	}
	b := &breaker{openFor: cfg.BreakerOpenFor}
	if b.openFor <= 0 {
		b.openFor = defaultBreakerOpenFor
	}
	onChange := cfg.OnBreakerChange
	b.cb = gobreaker.NewCircuitBreaker[struct{}](gobreaker.Settings{
		MaxRequests:  1, // one probe at a time while half-open
		Timeout:      b.openFor,
		ReadyToTrip:  func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= uint32(failures) },
		IsExcluded:   func(err error) bool { return err != nil && !isAnswer(err) && !errors.Is(err, ErrUnavailable) },
		IsSuccessful: func(err error) bool { return err == nil || isAnswer(err) },
		// Called under the breaker's lock, with gobreaker's own clock (time.Now).
		OnStateChange: func(_ string, from, to gobreaker.State) {
			if to == gobreaker.StateOpen {
				b.openUntil.Store(time.Now().Add(b.openFor).UnixNano())
			}
			if onChange != nil {
				onChange(from.String(), to.String())
			}
		},
	})
	return b
}

// isAnswer reports an error that is the database's answer to a wrong
// request, proof that the database works.
func isAnswer(err error) bool {
	var gone errCallerGone
	if errors.As(err, &gone) {
		return false
	}
	return errors.Is(err, ErrNotFound) || errors.Is(err, ErrNIFConflict) || errors.Is(err, ErrClientExists)
}

// run does one Store call's database work through s's breaker. ctx is the
// caller's: op's failure after the caller left is not counted.
func run[T any](ctx context.Context, s *Store, op func() (T, error)) (T, error) {
	var out T
	_, err := s.breaker.cb.Execute(func() (struct{}, error) {
		v, err := op()
		out = v
		if err != nil && ctx.Err() != nil {
			return struct{}{}, errCallerGone{err}
		}
		return struct{}{}, err
	})
	var gone errCallerGone
	switch {
	case err == nil:
		return out, nil
	case errors.As(err, &gone):
		return out, gone.err
	case errors.Is(err, gobreaker.ErrOpenState), errors.Is(err, gobreaker.ErrTooManyRequests):
		var zero T
		wait := time.Until(time.Unix(0, s.breaker.openUntil.Load()))
		if wait < 0 {
			wait = 0 // half-open: a probe is in flight
		}
		return zero, &CircuitOpenError{retryAfter: wait}
	}
	return out, err
}

// BreakerState is the state of the Store's circuit breaker: "closed",
// "open" or "half-open".
func (s *Store) BreakerState() string { return s.breaker.cb.State().String() }
