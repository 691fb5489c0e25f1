// Package jsonstr writes JSON strings the way encoding/json and log/slog
// each do, byte for byte, into a caller's buffer: the API's hand-written
// encoders and the access log share it.
package jsonstr

import "unicode/utf8"

// Style is one way of escaping.
type Style struct {
	safe    [utf8.RuneSelf]bool // ASCII bytes written as they are
	shortBF bool                // \b and \f as such (else \u0008, \u000c)
}

func newStyle(html bool) *Style {
	st := &Style{shortBF: html}
	for c := 0x20; c < utf8.RuneSelf; c++ {
		st.safe[c] = c != '"' && c != '\\' && (!html || c != '<' && c != '>' && c != '&')
	}
	return st
}

var (
	// JSON is encoding/json's default: HTML characters escaped too.
	JSON = newStyle(true)
	// Slog is log/slog's JSONHandler: <, > and & kept.
	Slog = newStyle(false)
)

const hexDigits = "0123456789abcdef"

// Append appends s quoted in style st: quote, backslash and control
// characters escaped, invalid UTF-8 as U+FFFD, U+2028 and U+2029 (line
// separators to JavaScript) escaped.
func Append(b []byte, s string, st *Style) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if st.safe[c] {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			b = appendEscaped(b, c, st)
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

func appendEscaped(b []byte, c byte, st *Style) []byte {
	switch {
	case c == '"' || c == '\\':
		return append(b, '\\', c)
	case c == '\n':
		return append(b, '\\', 'n')
	case c == '\r':
		return append(b, '\\', 'r')
	case c == '\t':
		return append(b, '\\', 't')
	case c == '\b' && st.shortBF:
		return append(b, '\\', 'b')
	case c == '\f' && st.shortBF:
		return append(b, '\\', 'f')
	}
	return append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
}
