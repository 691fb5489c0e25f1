package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"net/mail"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/invoicing-ao/gateway/invoicing"
)

// maxBodyBytes bounds a request body (64 KiB: a client record is far smaller).
const maxBodyBytes = 64 << 10

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

// readJSONBody enforces media type and size (the body is bounded by
// withBodyLimit), then returns the top-level object's known members and
// the errors of its unknown and repeated ones (jsonMembers).
func readJSONBody(r *http.Request, known []string) (map[string]json.RawMessage, []FieldError, error) {
	body, err := readBody(r)
	if err != nil {
		return nil, nil, err
	}
	return jsonMembers(body, known)
}

// readBody reads a JSON request body: application/json (UTF-8) only, at most
// maxBodyBytes.
func readBody(r *http.Request) ([]byte, error) {
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/json" || (params["charset"] != "" && !strings.EqualFold(params["charset"], "utf-8")) {
		return nil, &Error{Code: "unsupported_media_type", Detail: "Send the body as Content-Type: application/json (UTF-8)."}
	}
	if r.ContentLength > maxBodyBytes {
		return nil, &Error{Code: "body_too_large", Detail: "The body must be at most " + strconv.Itoa(maxBodyBytes) + " bytes."}
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, &Error{Code: "body_too_large", Detail: "The body must be at most " + strconv.Itoa(maxBodyBytes) + " bytes."}
		}
		return nil, &Error{Code: "invalid_body", Detail: "The body could not be read.", Err: err}
	}
	return body, nil
}

// jsonMembers returns the known members of the JSON object body (the first
// of a repeated one) and an error for each unknown or repeated member. Those
// are not the end of the reading: the caller checks the members it knows and
// answers every error of the body at once, so that a caller fixing an
// unknown field does not then learn of the next mistake. A body that is not
// one JSON object is an error of its own (err), with nothing to check.
func jsonMembers(body []byte, known []string) (members map[string]json.RawMessage, fields []FieldError, err error) {
	bad := func(msg string) error {
		return &Error{Code: "invalid_body", Detail: msg, Fields: []FieldError{{"body", msg}}}
	}
	if !utf8.Valid(body) {
		return nil, nil, bad("The body is not valid UTF-8.")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, nil, bad("The body must be a JSON object.")
	}
	members = map[string]json.RawMessage{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, nil, bad("The body is not valid JSON.")
		}
		name, _ := t.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, nil, bad("The body is not valid JSON.")
		}
		switch {
		case !contains(known, name):
			fields = append(fields, FieldError{name, "is not a known field; known: " + strings.Join(known, ", ")})
		case members[name] != nil:
			fields = append(fields, FieldError{name, "is given more than once"})
		default:
			members[name] = raw
		}
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('}') {
		return nil, nil, bad("The body is not valid JSON.")
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, nil, bad("The body must hold one JSON object and nothing after it.")
	}
	return members, fields, nil
}

// stringMember reads an optional string member: absent and null are "not
// given"; any other JSON type is an error.
func stringMember(m map[string]json.RawMessage, name string, fields *[]FieldError) (string, bool) {
	raw, ok := m[name]
	if !ok || string(raw) == "null" {
		return "", false
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		*fields = append(*fields, FieldError{name, "must be a string"})
		return "", false
	}
	return s, true
}

// decodeNewClient validates a create-client body (ClientInput's rules in
// gateway/apidocs/openapi.yaml; docs/integrators.md) and returns it normalized.
func decodeNewClient(body []byte) (invoicing.NewClient, error) {
	m, fe, err := jsonMembers(body, clientFields)
	if err != nil {
		return invoicing.NewClient{}, err
	}
	var nc invoicing.NewClient
	fail := func(f, msg string) { fe = append(fe, FieldError{f, msg}) }

	if raw, given := m["name"]; !given || string(raw) == "null" {
		fail("name", "is required")
	} else if name, ok := stringMember(m, "name", &fe); ok {
		// Anywhere, edges included: U+2028 is a space TrimSpace would take
		// off, and the document's pattern refuses it wherever it is.
		hidden, isHidden := invoicing.HiddenRune(name)
		name = strings.TrimSpace(name)
		switch {
		case name == "":
			fail("name", "must not be blank")
		case utf8.RuneCountInString(name) > 200:
			fail("name", "must be at most 200 characters")
		case hasControl(name):
			fail("name", "must not contain control characters")
		case isHidden: // shown as it is on invoices and lists, it would spoof another name
			fail("name", invoicing.HiddenMessage(hidden))
		default:
			nc.Name = name
		}
	}

	if s, ok := stringMember(m, "nif", &fe); ok {
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
	if s, ok := stringMember(m, "email", &fe); ok {
		s = strings.TrimSpace(s)
		if !validEmail(s) {
			fail("email", "must be a valid e-mail address")
		} else {
			nc.Email = &s
		}
	}
	if s, ok := stringMember(m, "phone", &fe); ok {
		p := strings.Join(strings.Fields(s), "")
		if !phonePattern.MatchString(p) {
			fail("phone", "must be +244 followed by 9 digits")
		} else {
			nc.Phone = &p
		}
	}
	if s, ok := stringMember(m, "address", &fe); ok {
		hidden, isHidden := invoicing.HiddenRune(s)
		s = strings.TrimSpace(s)
		switch {
		case s == "":
			fail("address", "must not be blank; omit it or send null")
		case utf8.RuneCountInString(s) > 500:
			fail("address", "must be at most 500 characters")
		case hasControl(strings.NewReplacer("\n", "", "\r", "", "\t", "").Replace(s)):
			fail("address", "must not contain control characters")
		case isHidden:
			fail("address", invoicing.HiddenMessage(hidden))
		default:
			nc.Address = &s
		}
	}
	if s, ok := stringMember(m, "type", &fe); ok {
		if s != "COMPANY" && s != "INDIVIDUAL" {
			fail("type", "must be COMPANY or INDIVIDUAL")
		} else {
			nc.Type = &s
		}
	}
	if len(fe) > 0 {
		return invoicing.NewClient{}, &Error{Code: "invalid_body", Detail: "The client is invalid.", Fields: fe}
	}
	return nc, nil
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
