package admin

import (
	"strings"

	"github.com/invoicing-ao/gateway/audit"
	"github.com/invoicing-ao/gateway/invoicing"
	"github.com/invoicing-ao/gateway/web"
)

// The text of a change. What a person types into a key's name or an
// endpoint's URL or description is kept in Redis, shown in the console and
// the command line, and written to the audit log with the change. It is
// refused at the edge, naming its field, before anything changes, when it
// holds what looks like a secret (audit.HoldsSecret: the audit log would
// refuse the change's event, and the secret would sit in Redis and on every
// screen), or a character that hides or reverses text
// (invoicing.HiddenRune), as X-Actor is.

// textField is one field of a change's text: its name, as the admin API's
// body has it, and its value.
type textField struct{ name, value string }

// secretMessage is what a field with a secret-shaped string is told.
const secretMessage = "must not hold what looks like an API key or a webhook signing secret: " +
	"the audit log records every change, and never a secret"

// checkTexts returns an error for each field whose value cannot be taken.
func checkTexts(fields ...textField) []web.FieldError {
	var fe []web.FieldError
	for _, f := range fields {
		if holdsSecret(f.value) {
			fe = append(fe, web.FieldError{Field: f.name, Message: secretMessage})
		} else if r, ok := invoicing.HiddenRune(f.value); ok {
			fe = append(fe, web.FieldError{Field: f.name, Message: invoicing.HiddenMessage(r)})
		}
	}
	return fe
}

// refuseTexts is checkTexts as the error of a change (what names the
// change: "The key", "The webhook endpoint"); nil when every value can be
// taken.
func refuseTexts(what string, fields ...textField) error {
	if fe := checkTexts(fields...); len(fe) > 0 {
		return &web.Error{Code: "invalid_body", Detail: what + " cannot be taken: " + fe[0].Field + " " + fe[0].Message + ".", Fields: fe}
	}
	return nil
}

// holdsSecret is audit.HoldsSecret of s and of s percent-decoded (up to
// three times, as a URL's query may carry a secret encoded): a receiver or
// a log decodes what the gateway keeps.
func holdsSecret(s string) bool {
	for range 4 {
		if audit.HoldsSecret(s) {
			return true
		}
		d := unescape(s)
		if d == s {
			return false
		}
		s = d
	}
	return false
}

// unescape decodes every valid %XX of s and keeps the rest as it is
// (url.PathUnescape gives up on the whole string at one bad escape).
func unescape(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) && ishex(s[i+1]) && ishex(s[i+2]) {
			b = append(b, unhex(s[i+1])<<4|unhex(s[i+2]))
			i += 2
			continue
		}
		b = append(b, s[i])
	}
	return string(b)
}

func ishex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	}
	return c - 'a' + 10
}
