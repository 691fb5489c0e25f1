package web

import (
	"errors"
	"testing"
)

// A body that is not JSON is told where it stops being JSON (line,
// column and byte) and what was expected there, not only that it is not
// JSON; the same sentence is the body's field error.
func TestInvalidJSONSaysWhere(t *testing.T) {
	for body, want := range map[string]string{
		`{"name":"Ana",}`: `The body is not valid JSON at line 1, column 15 (byte 14): expected a member name in double quotes, found '}'.`,
		"{\n  \"name\": \"Ana\",\n  \"mode\": LIVE\n}": `The body is not valid JSON at line 3, column 11 (byte 29): expected a value (a string, number, object, array, true, false or null), found 'L'.`,
		`{"name" "Ana"}`:   `The body is not valid JSON at line 1, column 9 (byte 8): expected ':' after a member name, found '"'.`,
		`{"a":1 "b":2}`:    `The body is not valid JSON at line 1, column 8 (byte 7): expected ',' or '}' after a member, found '"'.`,
		`{"a":[1,2}`:       `The body is not valid JSON at line 1, column 10 (byte 9): expected ',' or ']' after an element, found '}'.`,
		`{"a":tru}`:        `The body is not valid JSON at line 1, column 9 (byte 8): expected true, false or null, found '}'.`,
		"{\"a\":\"x\ny\"}": `The body is not valid JSON at line 1, column 8 (byte 7): a control character inside a string (write it escaped, such as \n), found '\n'.`,
		`{"a":"\q"}`:       `The body is not valid JSON at line 1, column 8 (byte 7): an escape that JSON does not have (\" \\ \/ \b \f \n \r \t \uXXXX), found 'q'.`,
		`{"a":-}`:          `The body is not valid JSON at line 1, column 7 (byte 6): a malformed number, found '}'.`,
		`{"é":1,,}`:        `The body is not valid JSON at line 1, column 8 (byte 8): expected a member name in double quotes, found ','.`,
		`{"a":1`:           `The body is not valid JSON: it ends at line 1, column 7 (byte 6) before the object does.`,
		`{a:1}`:            `The body is not valid JSON at line 1, column 2 (byte 1): expected a member name in double quotes, found 'a'.`,
		`x`:                `The body is not valid JSON at line 1, column 1 (byte 0): expected a value (a string, number, object, array, true, false or null), found 'x'.`,
		``:                 `The body is empty: send a JSON object.`,
		`[1]`:              `The body must be a JSON object.`,
		`"Ana"`:            `The body must be a JSON object.`,
		`{"a":1} x`:        `The body must hold one JSON object and nothing after it.`,
	} {
		_, _, err := JSONMembers([]byte(body), []string{"a", "name", "mode", "b"})
		var e *Error
		if !errors.As(err, &e) || e.Code != "invalid_body" {
			t.Errorf("%q: %v, want invalid_body", body, err)
			continue
		}
		if e.Detail != want || len(e.Fields) != 1 || e.Fields[0].Field != "body" || e.Fields[0].Message != want {
			t.Errorf("%q:\n got %q %v\nwant %q", body, e.Detail, e.Fields, want)
		}
	}
}
