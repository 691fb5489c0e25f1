package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// invalidJSON says where body stops being JSON and what was expected
// there, as a person fixing it by hand needs: "The body is not valid JSON
// at line 3, column 9 (byte 27): expected a value, found 'x'." The
// offset is encoding/json's checker's (the byte after the one refused,
// or the body's length when it ends early), read again from the whole
// body: the streaming decoder's offsets differ by one between its calls.
func invalidJSON(body []byte) string {
	var se *json.SyntaxError
	if err := json.Unmarshal(body, new(json.RawMessage)); !errors.As(err, &se) {
		return "The body is not valid JSON."
	}
	at := int(se.Offset)
	if at < len(body) || !strings.HasPrefix(se.Error(), "unexpected end") {
		at-- // the byte refused
	}
	at = max(0, min(at, len(body)))
	line := bytes.Count(body[:at], []byte("\n")) + 1
	col := utf8.RuneCount(body[bytes.LastIndexByte(body[:at], '\n')+1:at]) + 1
	where := "line " + strconv.Itoa(line) + ", column " + strconv.Itoa(col) + " (byte " + strconv.Itoa(at) + ")"
	if at >= len(body) {
		return "The body is not valid JSON: it ends at " + where + " before the object does."
	}
	r, _ := utf8.DecodeRune(body[at:])
	return fmt.Sprintf("The body is not valid JSON at %s: %s, found %q.", where, expected(se.Error()), r)
}

// expected is what the JSON checker's message says was expected, in the
// caller's words.
func expected(msg string) string {
	for _, e := range []struct{ context, want string }{
		{"looking for beginning of object key string", "expected a member name in double quotes"},
		{"looking for beginning of value", "expected a value (a string, number, object, array, true, false or null)"},
		{"after object key:value pair", "expected ',' or '}' after a member"},
		{"after object key", "expected ':' after a member name"},
		{"after array element", "expected ',' or ']' after an element"},
		{"after top-level value", "expected nothing after the object"},
		{"in string literal", "a control character inside a string (write it escaped, such as \\n)"},
		{"in string escape code", "an escape that JSON does not have (\\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX)"},
		{"in literal", "expected true, false or null"},
		{"numeric literal", "a malformed number"},
	} {
		if strings.HasSuffix(msg, e.context) || strings.Contains(msg, " "+e.context) {
			return e.want
		}
	}
	return strings.TrimPrefix(msg, "invalid character ")
}
