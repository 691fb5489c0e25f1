package admin

import (
	"github.com/invoicing-ao/gateway/invoicing"
	"github.com/invoicing-ao/gateway/web"
)

// The text of a change. What a person types into a key's name or an
// endpoint's URL or description is kept in Redis, shown in the console and
// the command line, and written to the audit log with the change. It is
// refused at the edge, naming its field, before anything changes, when it
// holds what looks like a secret (invoicing.HoldsSecret: the audit log would
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

// holdsSecret is invoicing.HoldsSecret: what the audit log refuses, as it
// is or percent-decoded.
func holdsSecret(s string) bool { return invoicing.HoldsSecret(s) }
