package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxBodyBytes bounds a request body (64 KiB: a client record, a key or a
// webhook endpoint is far smaller).
const MaxBodyBytes = 64 << 10

// ReadJSONBody reads a request's JSON object: application/json (UTF-8)
// only, at most MaxBodyBytes (ReadBody). It returns the known members (the
// first of a repeated one) and an error for each unknown or repeated
// member (JSONMembers); err is a body that is not one JSON object (or not
// JSON, too large...): nothing to check.
func ReadJSONBody(r *http.Request, known []string) (members map[string]json.RawMessage, fields []FieldError, err error) {
	body, err := ReadBody(r)
	if err != nil {
		return nil, nil, err
	}
	return JSONMembers(body, known)
}

// ReadBody reads a JSON request body: application/json (UTF-8) only, at
// most MaxBodyBytes (withBodyLimit bounds what is read).
func ReadBody(r *http.Request) ([]byte, error) {
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/json" || (params["charset"] != "" && !strings.EqualFold(params["charset"], "utf-8")) {
		return nil, &Error{Code: "unsupported_media_type", Detail: "Send the body as Content-Type: application/json (UTF-8)."}
	}
	if r.ContentLength > MaxBodyBytes {
		return nil, &Error{Code: "body_too_large", Detail: "The body must be at most " + strconv.Itoa(MaxBodyBytes) + " bytes."}
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, &Error{Code: "body_too_large", Detail: "The body must be at most " + strconv.Itoa(MaxBodyBytes) + " bytes."}
		}
		return nil, &Error{Code: "invalid_body", Detail: "The body could not be read.", Err: err}
	}
	return body, nil
}

// JSONMembers returns the known members of the JSON object body (the first
// of a repeated one) and an error for each unknown or repeated member. Those
// are not the end of the reading: the caller checks the members it knows and
// answers every error of the body at once, so that a caller fixing an
// unknown field does not then learn of the next mistake. A body that is not
// one JSON object is an error of its own (err), with nothing to check.
func JSONMembers(body []byte, known []string) (members map[string]json.RawMessage, fields []FieldError, err error) {
	bad := func(msg string) error {
		return &Error{Code: "invalid_body", Detail: msg, Fields: []FieldError{{"body", msg}}}
	}
	if !utf8.Valid(body) {
		return nil, nil, bad("The body is not valid UTF-8.")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		if len(bytes.TrimSpace(body)) == 0 {
			return nil, nil, bad("The body is empty: send a JSON object.")
		}
		if _, ok := t.(json.Delim); err == nil || ok {
			return nil, nil, bad("The body must be a JSON object.")
		}
		return nil, nil, bad(invalidJSON(body))
	}
	members = map[string]json.RawMessage{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, nil, bad(invalidJSON(body))
		}
		name, _ := t.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, nil, bad(invalidJSON(body))
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
		return nil, nil, bad(invalidJSON(body))
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, nil, bad("The body must hold one JSON object and nothing after it.")
	}
	return members, fields, nil
}

// StringMember reads an optional string member of m: absent and null are
// "not given"; any other JSON type adds a FieldError to fields.
func StringMember(m map[string]json.RawMessage, name string, fields *[]FieldError) (string, bool) {
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
