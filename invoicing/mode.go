package invoicing

import (
	"fmt"
	"strings"
)

// ErrInvalidMode is returned for a mode other than LIVE or TEST.
var ErrInvalidMode = Define(Error{Kind: Invalid, Code: "invalid_body", Title: "Invalid request body", Message: "invalid mode (want LIVE or TEST)"})

// Mode is a key's mode: it picks the database (live or sandbox), the rate
// limit and the usage counters of every request made with the key. The zero
// value is no mode, valid nowhere.
type Mode string

// The two modes.
const (
	Live Mode = "LIVE"
	Test Mode = "TEST"
)

// Modes lists the modes in their table order (see Index).
var Modes = [2]Mode{Live, Test}

// ParseMode accepts "LIVE" or "TEST" in any letter case.
func ParseMode(s string) (Mode, error) {
	switch {
	case strings.EqualFold(s, string(Live)):
		return Live, nil
	case strings.EqualFold(s, string(Test)):
		return Test, nil
	}
	return "", fmt.Errorf("%w: %q", ErrInvalidMode, Clip(s))
}

// Valid reports whether m is LIVE or TEST.
func (m Mode) Valid() bool { return m == Live || m == Test }

// Index is m's place in per-mode tables: 0 for LIVE, 1 for TEST (and for
// nothing else: callers check Valid first).
func (m Mode) Index() int {
	if m == Test {
		return 1
	}
	return 0
}

// Lower is the mode in lower case ("live", "test"), as it appears in rate
// limit policy names and problem codes.
func (m Mode) Lower() string {
	switch m {
	case Live:
		return "live"
	case Test:
		return "test"
	}
	return strings.ToLower(string(m))
}

// Clip keeps user input quoted in error messages short.
func Clip(s string) string {
	const max = 40
	if len(s) > max {
		return s[:max] + "…"
	}
	return s
}
