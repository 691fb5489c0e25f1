package jsonlog

import (
	"log/slog"
	"strconv"
	"sync"
	"time"
)

// Line is one log line built field by field, for a hot path that logs the
// same flat fields on every call (the access log): no slog.Record, no
// []slog.Attr, nothing allocated. It writes what Handle writes for a record
// of the same time, level, message and String, Int and Float64 attributes,
// byte for byte. A Line is used by one goroutine, from Begin to End.
type Line struct {
	h *Handler
	b []byte
}

var lines = sync.Pool{New: func() any { return &Line{b: make([]byte, 0, 512)} }}

// Begin starts a line; nil when the handler's options call for slog's own
// handling (ReplaceAttr, AddSource) or t cannot be written as slog would:
// the caller logs through slog then.
func (h *Handler) Begin(t time.Time, level slog.Level, msg string) *Line {
	if !h.fast {
		return nil
	}
	l := lines.Get().(*Line)
	b, ok := appendHead(l.b[:0], t, level, msg)
	if !ok {
		lines.Put(l)
		return nil
	}
	l.b, l.h = b, h
	return l
}

func (l *Line) key(k string) {
	l.b = append(l.b, ',')
	l.b = appendString(l.b, k)
	l.b = append(l.b, ':')
}

// Str adds a string field.
func (l *Line) Str(k, v string) {
	l.key(k)
	l.b = appendString(l.b, v)
}

// Int adds an integer field.
func (l *Line) Int(k string, v int) {
	l.key(k)
	l.b = strconv.AppendInt(l.b, int64(v), 10)
}

// Float adds a number field; NaN and infinities, which JSON cannot hold,
// are written as slog writes them: as its error string.
func (l *Line) Float(k string, v float64) {
	l.key(k)
	if b, ok := appendFloat(l.b, v); ok {
		l.b = b
		return
	}
	l.b = appendString(l.b, "!ERROR:json: unsupported value: "+strconv.FormatFloat(v, 'g', -1, 64))
}

// End writes the line, in one Write, and gives the Line back: it must not
// be used after.
func (l *Line) End() error {
	l.b = append(l.b, "}\n"...)
	_, err := l.h.w.Write(l.b)
	if cap(l.b) <= maxPooled {
		l.h = nil
		lines.Put(l)
	}
	return err
}
