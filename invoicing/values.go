package invoicing

import (
	"encoding/json"
	"time"
)

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
