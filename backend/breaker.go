package backend

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
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

// Unwrap makes the error a backend.ErrUnavailable to errors.As as well:
// its kind (Unavailable) and code are that error's.
func (e *CircuitOpenError) Unwrap() error { return ErrUnavailable }

// RetryAfter is how long until the breaker lets a probe through; zero while a
// probe is already in flight.
func (e *CircuitOpenError) RetryAfter() time.Duration { return e.retryAfter }

// The breaker's defaults (Config.BreakerFailures, BreakerOpenFor,
// BreakerFirstProbe).
const (
	DefaultBreakerFailures   = 5
	DefaultBreakerOpenFor    = 5 * time.Second
	defaultBreakerFirstProbe = 250 * time.Millisecond
)

type breakerState uint8

const (
	closed breakerState = iota
	open
	halfOpen
)

func (s breakerState) String() string {
	switch s {
	case open:
		return "open"
	case halfOpen:
		return "half-open"
	}
	return "closed"
}

// breaker guards one database. It opens after a run of consecutive failures
// (ErrUnavailable: unreachable, refused, past the query deadline) and then
// refuses calls until its next probe, when one call at a time goes to the
// database: a probe that gets an answer closes it, a failed one reopens it.
//
// When to probe: an outage is usually short (a failover, a restart, a
// network blip), and every moment the breaker stays open after the database
// is back is an outage the database did not cause. So the first probe goes
// soon (firstProbe after opening), and each failed probe doubles the wait, up
// to openFor, so that a long outage costs the database one call per openFor
// at most. An answer resets the wait. A refused call is told how long until
// the next probe.
//
// What counts, and why:
//   - an answer, including "not found" and "NIF conflict", is a success: the
//     database works, the request was wrong;
//   - a call whose caller gave up (its own context canceled or past its own
//     deadline) is not counted: it says nothing of the database;
//   - ErrInvalid (raised by the adapter's own checks, never by the database)
//     and unexpected errors (an SQL or mapping error: the database answered,
//     not as expected) are not counted either;
//   - checks that fail before any query (a malformed id) never reach it;
//   - a call admitted before the last change of state does not count: its
//     outcome describes the database as it was then.
//
// Ping does not go through it: readiness must report the database as it is,
// not as the breaker last saw it.
type breaker struct {
	failures   int           // consecutive failures that open it
	firstProbe time.Duration // wait before the first probe after opening
	openFor    time.Duration // the longest wait between probes
	now        func() time.Time
	onChange   func(from, to string)

	mu      sync.Mutex
	state   breakerState
	gen     uint64        // bumped on every change of state
	run     int           // consecutive failures while closed
	wait    time.Duration // while open: the wait that ends at probeAt
	probeAt time.Time     // while open: when the next probe may go
	probing bool          // while half-open: a probe is in flight
}

func newBreaker(cfg Config) *breaker {
	b := &breaker{failures: cfg.BreakerFailures, openFor: cfg.BreakerOpenFor, firstProbe: cfg.BreakerFirstProbe,
		now: cfg.BreakerNow, onChange: cfg.OnBreakerChange}
	if b.failures <= 0 {
		b.failures = DefaultBreakerFailures
	}
	if b.openFor <= 0 {
		b.openFor = DefaultBreakerOpenFor
	}
	if b.firstProbe <= 0 {
		b.firstProbe = defaultBreakerFirstProbe
	}
	b.firstProbe = min(b.firstProbe, b.openFor)
	if b.now == nil {
		b.now = time.Now
	}
	return b
}

// outcome is what one admitted call says of the database.
type outcome uint8

const (
	succeeded outcome = iota // the database answered
	failed                   // the database could not be reached or did not answer in time
	ignored                  // nothing either way
)

// allow admits a call, returning the generation to report its outcome
// under, or refuses it with a *CircuitOpenError.
func (b *breaker) allow() (uint64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	b.advance(now)
	switch b.state {
	case open:
		return 0, &CircuitOpenError{retryAfter: b.probeAt.Sub(now)}
	case halfOpen:
		if b.probing {
			return 0, &CircuitOpenError{}
		}
		b.probing = true
	}
	return b.gen, nil
}

// done records the outcome of a call allow admitted under gen.
func (b *breaker) done(gen uint64, o outcome) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if gen != b.gen {
		return
	}
	switch {
	case o == ignored:
		b.probing = false // half-open: the next call probes instead
	case o == succeeded:
		b.run = 0
		if b.state == halfOpen {
			b.set(closed)
		}
	case b.state == halfOpen:
		b.reopen(min(2*b.wait, b.openFor))
	default:
		b.run++
		if b.run >= b.failures {
			b.reopen(b.firstProbe)
		}
	}
}

// advance turns an open breaker half-open once its probe is due.
func (b *breaker) advance(now time.Time) {
	if b.state == open && !now.Before(b.probeAt) {
		b.set(halfOpen)
	}
}

func (b *breaker) reopen(wait time.Duration) {
	b.wait, b.probeAt = wait, b.now().Add(wait)
	b.set(open)
}

func (b *breaker) set(to breakerState) {
	from := b.state
	b.state, b.gen, b.run, b.probing = to, b.gen+1, 0, false
	if b.onChange != nil {
		b.onChange(from.String(), to.String())
	}
}

func (b *breaker) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.advance(b.now())
	return b.state.String()
}

// isAnswer reports an error that is the database's answer to a wrong
// request, proof that the database works.
func isAnswer(err error) bool {
	return errors.Is(err, ErrNotFound) || errors.Is(err, ErrNIFConflict) || errors.Is(err, ErrClientExists)
}

// outcomeOf classifies a call's error for the breaker; ctx is the caller's.
func outcomeOf(ctx context.Context, err error) outcome {
	switch {
	case err == nil, isAnswer(err):
		return succeeded
	case ctx.Err() != nil: // the caller left: says nothing of the database
		return ignored
	case errors.Is(err, ErrUnavailable):
		return failed
	}
	return ignored
}

// run does one Store call's database work through s's breaker. ctx is the
// caller's: op's failure after the caller left is not counted.
func run[T any](ctx context.Context, b *breaker, op func() (T, error)) (T, error) {
	gen, err := b.allow()
	if err != nil {
		var zero T
		return zero, err
	}
	o := ignored // also if op panics: a probe must not stay in flight for ever
	defer func() { b.done(gen, o) }()
	v, err := op()
	o = outcomeOf(ctx, err)
	return v, err
}

// BreakerState is the state of the Store's circuit breaker: "closed",
// "open" or "half-open".
func (s *Store) BreakerState() string { return s.breaker.String() }
