// Package jsonlog is a slog handler that writes the lines slog.JSONHandler
// writes, byte for byte, at a fraction of the cost for flat records: the
// gateway's access log writes one per request, and slog's general handler
// (reflection for floats, pooled state, attribute walking) was most of the
// access log's CPU. Records it has no fast path for (groups, handler
// attributes, values of kind Any or LogValuer, ReplaceAttr, AddSource) go to
// a slog.JSONHandler on the same writer.
package jsonlog

import (
	"context"
	"io"
	"log/slog"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/invoicing-ao/gateway/internal/jsonstr"
)

// Handler writes JSON lines; safe for concurrent use. Each record is one
// Write of one whole line, as slog.JSONHandler does.
type Handler struct {
	w     io.Writer // whole lines, one Write each, safe for concurrent use
	level slog.Leveler
	std   slog.Handler // for what the fast path does not write
	fast  bool         // false when options call for slog's own handling
}

// New returns a Handler writing to w with opts (nil means slog's defaults).
func New(w io.Writer, opts *slog.HandlerOptions) *Handler {
	if opts == nil {
		opts = &slog.HandlerOptions{}
	}
	lw := w
	if _, ok := w.(wholeWriter); !ok {
		lw = &lockedWriter{w: w}
	}
	level := opts.Level
	if level == nil {
		level = slog.LevelInfo
	}
	return &Handler{w: lw, level: level, std: slog.NewJSONHandler(lw, opts),
		fast: opts.ReplaceAttr == nil && !opts.AddSource}
}

// Enabled reports whether the handler writes records of level l.
func (h *Handler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level.Level() }

// WithAttrs and WithGroup hand over to slog's handler: the gateway's hot
// paths log through the root handler.
func (h *Handler) WithAttrs(as []slog.Attr) slog.Handler { return h.std.WithAttrs(as) }
func (h *Handler) WithGroup(name string) slog.Handler    { return h.std.WithGroup(name) }

var bufs = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// Handle writes r as one line.
func (h *Handler) Handle(ctx context.Context, r slog.Record) error {
	if !h.fast {
		return h.std.Handle(ctx, r)
	}
	bp := bufs.Get().(*[]byte)
	defer func() {
		if cap(*bp) <= maxPooled {
			bufs.Put(bp)
		}
	}()
	b, ok := appendHead((*bp)[:0], r.Time, r.Level, r.Message)
	if !ok {
		return h.std.Handle(ctx, r) // slog writes its own error for these
	}
	r.Attrs(func(a slog.Attr) bool {
		b, ok = appendAttr(b, a)
		return ok
	})
	if !ok {
		return h.std.Handle(ctx, r)
	}
	b = append(b, "}\n"...)
	*bp = b
	_, err := h.w.Write(b)
	return err
}

// maxPooled is the largest line buffer given back to a pool: one grown
// past it by a huge record is left to the collector.
const maxPooled = 64 << 10

// appendHead opens a line as slog does: the time (unless zero), the level
// and the message. It reports false for a time slog writes its own way (a
// year outside 0-9999), which the fast paths leave to slog.
func appendHead(b []byte, t time.Time, level slog.Level, msg string) ([]byte, bool) {
	b = append(b, '{')
	if !t.IsZero() {
		if y := t.Year(); y < 0 || y >= 10000 {
			return b, false
		}
		b = append(b, `"time":"`...)
		b = t.AppendFormat(b, time.RFC3339Nano)
		b = append(b, `",`...)
	}
	b = append(b, `"level":`...)
	b = appendString(b, level.String())
	b = append(b, `,"msg":`...)
	return appendString(b, msg), true
}

// appendAttr writes ,"key":value for the kinds it knows as slog does, and
// reports false for the others.
func appendAttr(b []byte, a slog.Attr) ([]byte, bool) {
	v := a.Value
	if a.Key == "" && v.Any() == nil {
		return b, true // slog drops an empty attribute
	}
	b = append(b, ',')
	b = appendString(b, a.Key)
	b = append(b, ':')
	switch v.Kind() {
	case slog.KindString:
		return appendString(b, v.String()), true
	case slog.KindInt64:
		return strconv.AppendInt(b, v.Int64(), 10), true
	case slog.KindUint64:
		return strconv.AppendUint(b, v.Uint64(), 10), true
	case slog.KindBool:
		return strconv.AppendBool(b, v.Bool()), true
	case slog.KindDuration:
		return strconv.AppendInt(b, int64(v.Duration()), 10), true
	case slog.KindFloat64:
		return appendFloat(b, v.Float64())
	case slog.KindTime:
		t := v.Time()
		if y := t.Year(); y < 0 || y >= 10000 {
			return b, false
		}
		b = append(b, '"')
		b = t.AppendFormat(b, time.RFC3339Nano)
		return append(b, '"'), true
	}
	return b, false
}

// appendFloat writes f as encoding/json does (slog marshals floats with
// it); NaN and infinities, which JSON cannot hold, are left to slog.
func appendFloat(b []byte, f float64) ([]byte, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return b, false
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' { // e-09 to e-9, as encoding/json
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, true
}

// appendString writes s as a JSON string, escaped as slog does (not <, >
// or &).
func appendString(b []byte, s string) []byte { return jsonstr.Append(b, s, jsonstr.Slog) }

// wholeWriter is a writer that keeps each Write whole under concurrent use
// and says so (logbuf.Writer, which locks already): the Handler writes to it
// without a lock of its own, one fewer lock per line.
type wholeWriter interface {
	io.Writer
	WritesWhole()
}

// lockedWriter serializes the writes of both paths to one writer.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
