package backend

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/invoicing-ao/gateway/invoicing"
)

// The mapping rules from the platform's values to the API's, shared by both
// engines so that PostgreSQL and SQLite give byte-identical JSON.

// clientType maps customers.kind to the API's client type (null stays null;
// an unknown letter is reported as null rather than failing the whole read).
func clientType(kind *string) *string {
	if kind == nil {
		return nil
	}
	var t string
	switch *kind {
	case "C":
		t = "COMPANY"
	case "I":
		t = "INDIVIDUAL"
	default:
		return nil
	}
	return &t
}

// kindOf maps the API's client type back to customers.kind.
func kindOf(typ *string) (*string, error) {
	if typ == nil {
		return nil, nil
	}
	var k string
	switch *typ {
	case "COMPANY":
		k = "C"
	case "INDIVIDUAL":
		k = "I"
	default:
		return nil, fmt.Errorf("%w: client type", ErrInvalid)
	}
	return &k, nil
}

// normalizePhone renders an Angolan number stored in any of the platform's
// forms (+244923456789, 923456789, 923 456 789, +244 923 456 789) as
// +244923456789. Anything else (foreign numbers, typos) is returned as stored:
// guessing would corrupt data the user typed.
func normalizePhone(s string) string {
	if len(s) == 13 && strings.HasPrefix(s, "+244") && allDigits(s[4:]) {
		return s // the usual case, and no copy
	}
	digits := strings.ReplaceAll(s, " ", "")
	if strings.HasPrefix(digits, "+244") {
		digits = digits[4:]
	} else if strings.HasPrefix(s, "+") {
		return s
	}
	if len(digits) != 9 || !allDigits(digits) {
		return s
	}
	return "+244" + digits
}

// normalizeNIF removes every space and upper-cases, the form NIFs are stored,
// compared and searched in.
func normalizeNIF(s string) string {
	return strings.ToUpper(strings.ReplaceAll(s, " ", ""))
}

// invoiceStatus derives the API status from documents.state. The platform has
// no overdue state: an issued invoice or debit note whose due date
// (YYYY-MM-DD) is before today (YYYY-MM-DD in Luanda) is OVERDUE, a payment
// that is late. Other types never are: a proforma asks for no payment, a
// credit note owes the customer, and FR and FS are paid when issued.
// Fixed-width dates compare as text. invoiceWhere filters the same way.
func invoiceStatus(docType, state string, dueDate *string, today string) (string, error) {
	switch state {
	case "draft":
		return "DRAFT", nil
	case "paid":
		return "PAID", nil
	case "cancelled":
		return "CANCELLED", nil
	case "issued":
		if canBeOverdue(docType) && dueDate != nil && *dueDate < today {
			return "OVERDUE", nil
		}
		return "ISSUED", nil
	}
	return "", fmt.Errorf("backend: unknown document state %q", state)
}

// overdueTypes are the document types that can be OVERDUE (invoiceStatus).
const overdueTypes = "'FT', 'ND'"

func canBeOverdue(docType string) bool { return docType == "FT" || docType == "ND" }

// Decimal canonical form. The database's numeric text (PostgreSQL's
// numeric::text, SQLite's TEXT columns) is rewritten digit by digit, never
// through a float:
//   - money (totalAmount, item total): exactly 2 decimals, "1500.00";
//   - unitPrice: 2 to 4 decimals, zeros beyond the second trimmed, "10.50",
//     "12.3456";
//   - quantity: trailing zeros and point trimmed, "2", "1.5", "0.125".
//
// Digits are never rounded away: a non-zero digit beyond the usual scale (the
// platform's numeric scales make that impossible) is kept.
const (
	moneyScale    = 2
	priceMinScale = 2
	qtyMinScale   = 0
)

// canonicalDecimal rewrites a plain decimal ("-12.3400", "7", "0.5") keeping
// at least minScale decimals and dropping further trailing zeros.
func canonicalDecimal(s string, minScale int) (invoicing.Decimal, error) {
	bad := fmt.Errorf("backend: malformed decimal in database (%d bytes)", len(s))
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	intPart, frac, _ := strings.Cut(s, ".")
	if intPart == "" || !allDigits(intPart) || !allDigits(frac) {
		return "", bad
	}
	intPart = strings.TrimLeft(intPart, "0")
	if intPart == "" {
		intPart = "0"
	}
	frac = strings.TrimRight(frac, "0")
	for len(frac) < minScale {
		frac += "0"
	}
	if intPart == "0" && strings.Trim(frac, "0") == "" {
		neg = false // no "-0.00"
	}
	var b strings.Builder
	b.Grow(len(intPart) + len(frac) + 2)
	if neg {
		b.WriteByte('-')
	}
	b.WriteString(intPart)
	if frac != "" {
		b.WriteByte('.')
		b.WriteString(frac)
	}
	return invoicing.Decimal(b.String()), nil
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// Transmission statuses.
const (
	txNotApplicable = "NOT_APPLICABLE"
	txNotSent       = "NOT_SENT"
	txPending       = "PENDING"
	txValid         = "VALID"
	txInvalid       = "INVALID"
)

// submission is the newest agt_submission_documents row of a document joined
// with its agt_submissions row; nil when the document was never sent.
type submission struct {
	RequestID   *string
	SubmittedAt time.Time
	CheckedAt   *time.Time
	Status      *string // V, I or nil (not validated yet)
	Errors      *string // jsonb text: [{"idError": ..., "descriptionError": ...}]
}

// transmission maps a document's newest submission to the API's object. A PF
// has no fiscal value and is never transmitted, whatever rows exist.
func transmission(docType string, sub *submission) (*invoicing.Transmission, error) {
	t := &invoicing.Transmission{Errors: []invoicing.TransmissionError{}}
	switch {
	case docType == "PF":
		t.Status = txNotApplicable
		return t, nil
	case sub == nil:
		t.Status = txNotSent
		return t, nil
	}
	t.RequestID = sub.RequestID
	t.SubmittedAt = &invoicing.Timestamp{Time: sub.SubmittedAt}
	if sub.CheckedAt != nil {
		t.CheckedAt = &invoicing.Timestamp{Time: *sub.CheckedAt}
	}
	switch {
	case sub.Status == nil:
		t.Status = txPending
	case *sub.Status == "V":
		t.Status = txValid
	case *sub.Status == "I":
		t.Status = txInvalid
	default:
		return nil, fmt.Errorf("backend: unknown AGT status %q", *sub.Status)
	}
	if sub.Errors != nil {
		errs, err := agtErrors(*sub.Errors)
		if err != nil {
			return nil, err
		}
		t.Errors = errs
	}
	return t, nil
}

// agtErrors decodes AGT's error list. AGT's codes are strings ("E11"), but a
// bare number is accepted and kept as its text.
func agtErrors(raw string) ([]invoicing.TransmissionError, error) {
	var items []struct {
		ID   json.RawMessage `json:"idError"`
		Desc json.RawMessage `json:"descriptionError"`
	}
	if err := json.Unmarshal([]byte(raw), &items); err != nil {
		return nil, fmt.Errorf("backend: malformed AGT errors in database: %w", err)
	}
	out := make([]invoicing.TransmissionError, 0, len(items))
	for _, it := range items {
		out = append(out, invoicing.TransmissionError{Code: jsonText(it.ID), Message: jsonText(it.Desc)})
	}
	return out, nil
}

func jsonText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	return string(raw)
}

// invoiceNumber is the number people see: doc_type, space, series, slash, seq.
func invoiceNumber(docType, series string, seq int64) string {
	return fmt.Sprintf("%s %s/%d", docType, series, seq)
}

// escapeLike makes s a literal inside a LIKE pattern (escape character \).
func escapeLike(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return r.Replace(s)
}
