package gateway

import (
	"net/mail"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/invoicing-ao/gateway/invoicing"
	"github.com/invoicing-ao/gateway/web"
)

var (
	// NIF forms accepted on create, after spaces are removed and letters
	// upper-cased: 9 digits (ClientInput.nif's form in gateway/apidocs/openapi.yaml), 10 digits (companies),
	// 9 digits + 2 letters + 3 digits (individuals' identity-card numbers).
	nifPattern   = regexp.MustCompile(`^(?:[0-9]{9}|[0-9]{10}|[0-9]{9}[A-Z]{2}[0-9]{3})$`)
	phonePattern = regexp.MustCompile(`^\+244[0-9]{9}$`)
)

// finalConsumerNIF is the platform's placeholder for anonymous consumers:
// nobody's number, so no client may be created with it.
const finalConsumerNIF = "999999999"

var clientFields = []string{"name", "nif", "email", "phone", "address", "type"}

// decodeNewClient validates a create-client body (ClientInput's rules in
// gateway/apidocs/openapi.yaml; docs/integrators.md) and returns it normalized.
func decodeNewClient(body []byte) (invoicing.NewClient, error) {
	m, fe, err := web.JSONMembers(body, clientFields)
	if err != nil {
		return invoicing.NewClient{}, err
	}
	var nc invoicing.NewClient
	fail := func(f, msg string) { fe = append(fe, web.FieldError{Field: f, Message: msg}) }

	if raw, given := m["name"]; !given || string(raw) == "null" {
		fail("name", "is required")
	} else if name, ok := web.StringMember(m, "name", &fe); ok {
		if name, why := checkName(name); why != "" {
			fail("name", why)
		} else {
			nc.Name = name
		}
	}

	if s, ok := web.StringMember(m, "nif", &fe); ok {
		n := strings.ToUpper(strings.Join(strings.Fields(s), ""))
		switch {
		case n == finalConsumerNIF:
			fail("nif", "999999999 is the anonymous final consumer's placeholder, not a client's NIF")
		case !nifPattern.MatchString(n):
			fail("nif", "must be 9 digits, 10 digits (company) or 9 digits, 2 letters and 3 digits (individual)")
		default:
			nc.NIF = &n
		}
	}
	if s, ok := web.StringMember(m, "email", &fe); ok {
		s = strings.TrimSpace(s)
		if !validEmail(s) {
			fail("email", "must be a valid e-mail address")
		} else {
			nc.Email = &s
		}
	}
	if s, ok := web.StringMember(m, "phone", &fe); ok {
		p := strings.Join(strings.Fields(s), "")
		if !phonePattern.MatchString(p) {
			fail("phone", "must be +244 followed by 9 digits")
		} else {
			nc.Phone = &p
		}
	}
	if s, ok := web.StringMember(m, "address", &fe); ok {
		if s, why := checkAddress(s); why != "" {
			fail("address", why)
		} else {
			nc.Address = &s
		}
	}
	if s, ok := web.StringMember(m, "type", &fe); ok {
		if s != "COMPANY" && s != "INDIVIDUAL" {
			fail("type", "must be COMPANY or INDIVIDUAL")
		} else {
			nc.Type = &s
		}
	}
	if len(fe) > 0 {
		return invoicing.NewClient{}, &web.Error{Code: "invalid_body", Detail: "The client is invalid.", Fields: fe}
	}
	return nc, nil
}

// checkName is a client's name, trimmed, or why it is refused.
func checkName(name string) (string, string) {
	// Anywhere, edges included: U+2028 is a space TrimSpace would take
	// off, and the document's pattern refuses it wherever it is.
	hidden, isHidden := invoicing.HiddenRune(name)
	name = strings.TrimSpace(name)
	switch {
	case name == "":
		return "", "must not be blank"
	case utf8.RuneCountInString(name) > 200:
		return "", "must be at most 200 characters"
	case hasControl(name):
		return "", "must not contain control characters"
	case isHidden: // shown as it is on invoices and lists, it would spoof another name
		return "", invoicing.HiddenMessage(hidden)
	}
	return name, ""
}

// checkAddress is a client's address, trimmed, or why it is refused.
func checkAddress(s string) (string, string) {
	hidden, isHidden := invoicing.HiddenRune(s)
	s = strings.TrimSpace(s)
	switch {
	case s == "":
		return "", "must not be blank; omit it or send null"
	case utf8.RuneCountInString(s) > 500:
		return "", "must be at most 500 characters"
	case hasControl(strings.NewReplacer("\n", "", "\r", "", "\t", "").Replace(s)):
		return "", "must not contain control characters"
	case isHidden:
		return "", invoicing.HiddenMessage(hidden)
	}
	return s, ""
}

// validEmail accepts a bare addr-spec (no display name) with a dotted domain.
func validEmail(s string) bool {
	if len(s) > 254 || hasControl(s) {
		return false
	}
	a, err := mail.ParseAddress(s)
	if err != nil || a.Address != s || a.Name != "" {
		return false
	}
	at := strings.LastIndexByte(s, '@')
	domain := s[at+1:]
	return at > 0 && strings.Contains(domain, ".") && !strings.HasPrefix(domain, ".") && !strings.HasSuffix(domain, ".")
}
