package gateway

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/invoicing-ao/gateway/authz"
)

// Request facts travel in the context under this unexported key. One
// mutable record per request, made by the outermost middleware, lets inner
// layers (router, authentication) tell outer ones (access log) what they
// learned, with a single allocation.
type ctxKey struct{}

type reqState struct {
	ID     string
	Route  string    // the route's name, for logs, traces and metrics
	Key    authz.Key // set once the key is verified
	Authed bool      // the key is verified, whatever was answered after
}

func stateFrom(ctx context.Context) *reqState {
	st, _ := ctx.Value(ctxKey{}).(*reqState)
	if st == nil {
		return &reqState{}
	}
	return st
}

// saneRequestID accepts a caller's X-Request-Id only when it is short and
// made of characters that cannot forge log lines or headers.
func saneRequestID(s string) bool {
	if len(s) == 0 || len(s) > 128 {
		return false
	}
	// A key pasted into the wrong header would be echoed, logged and traced.
	if len(s) >= 4 && s[0]|0x20 == 'i' && s[1]|0x20 == 'g' && s[2]|0x20 == 'w' && s[3] == '_' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9',
			c == '-', c == '_', c == '.', c == ':':
		default:
			return false
		}
	}
	return true
}

func newRequestID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// withRequestID gives every request an id, echoed in X-Request-Id, and the
// state record the later layers fill in.
func withRequestID(next handler) handler {
	return func(w http.ResponseWriter, r *http.Request) (answer, error) {
		id := r.Header.Get("X-Request-Id")
		if !saneRequestID(id) {
			id = newRequestID()
		}
		w.Header().Set("X-Request-Id", id)
		st := &reqState{ID: id}
		return next(w, r.WithContext(context.WithValue(r.Context(), ctxKey{}, st)))
	}
}

// MaxHeaderBytes bounds a request's line and headers together: API calls
// need a few hundred bytes, and a larger head only costs memory.
const MaxHeaderBytes = 16 << 10

// withHeaderLimit answers requests whose line and headers exceed
// MaxHeaderBytes with a 431 in the API's error format. The count is that of
// the head as sent (each header as "Name: value\r\n"); net/http's own
// cut-off, set higher (NewHTTPServer), only stops what would not fit in
// memory, and answers in plain text.
func withHeaderLimit(next handler) handler {
	return func(w http.ResponseWriter, r *http.Request) (answer, error) {
		n := len(r.Method) + 1 + len(r.RequestURI) + 1 + len(r.Proto) + 2 + len("Host: \r\n") + len(r.Host)
		for k, vs := range r.Header {
			for _, v := range vs {
				n += len(k) + len(v) + 4
			}
		}
		if n > MaxHeaderBytes {
			return answer{}, &Error{Code: "headers_too_large",
				Detail: "The request line and headers must be at most " + strconv.Itoa(MaxHeaderBytes) + " bytes together."}
		}
		return next(w, r)
	}
}

// withBodyLimit bounds every request body to maxBodyBytes: reading past it
// fails (readJSONBody answers 413) and the connection is closed after the
// answer rather than drained.
func withBodyLimit(next handler) handler {
	return func(w http.ResponseWriter, r *http.Request) (answer, error) {
		if r.Body != nil && r.Body != http.NoBody {
			r.Body = http.MaxBytesReader(w, r.Body, maxBodyBytes)
		}
		return next(w, r)
	}
}

// withRecover turns a panic into a 500 problem instead of a dropped connection.
func withRecover(next handler) handler {
	return func(w http.ResponseWriter, r *http.Request) (ans answer, err error) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				ans, err = answer{}, &Error{Code: "internal_error", Detail: "An internal error occurred.", Err: fmt.Errorf("panic: %v", v)}
			}
		}()
		return next(w, r)
	}
}

// withSecurityHeaders sets the headers every API response needs: API answers
// are private to the caller and never to be sniffed as HTML.
func withSecurityHeaders(next handler) handler {
	return func(w http.ResponseWriter, r *http.Request) (answer, error) {
		h := w.Header()
		h["X-Content-Type-Options"] = nosniff
		h["Cache-Control"] = noStore
		return next(w, r)
	}
}

// Constant header values, shared by every answer (net/http only reads them;
// cap 1 makes an Add copy instead of writing into them).
var (
	nosniff = []string{"nosniff"}
	noStore = []string{"no-store"}
)

// accessLog writes one structured line per request: ids, route, status and
// latency, never the key secret, the body or the query string (it can hold a
// search for a person's name or NIF).
func (s *Server) accessLog(next handler) handler {
	return func(w http.ResponseWriter, r *http.Request) (answer, error) {
		start := s.now()
		ans, err := next(w, r)
		st := stateFrom(r.Context())
		route := st.Route
		if route == "" {
			route = "unmatched"
		}
		attrs := make([]slog.Attr, 0, 14)
		attrs = append(attrs,
			slog.String("requestId", st.ID),
			slog.String("method", r.Method),
			slog.String("route", route),
			slog.Int("status", ans.status),
			slog.Int("bytes", ans.bytes),
			slog.Float64("latencyMs", float64(s.now().Sub(start).Microseconds())/1000),
		)
		var p *Error
		if errors.As(err, &p) {
			attrs = append(attrs, slog.String("code", p.Code))
			if ans.status >= 500 && p.Err != nil {
				attrs = append(attrs, slog.String("error", p.Err.Error()))
			}
		}
		level := slog.LevelInfo
		if ans.status >= 500 {
			level = slog.LevelError
		}
		if st.Authed {
			attrs = append(attrs, slog.String("company", st.Key.CompanyID), slog.String("keyId", st.Key.ID), slog.String("mode", string(st.Key.Mode)))
		}
		if sc := trace.SpanContextFromContext(r.Context()); sc.IsValid() {
			attrs = append(attrs, slog.String("traceId", sc.TraceID().String()), slog.String("spanId", sc.SpanID().String()))
		}
		// The handler directly, not Logger.LogAttrs: a Record without a
		// caller's PC spares a runtime.Callers per request (the line has no
		// source anyway).
		if h := s.logger.Handler(); h.Enabled(r.Context(), level) {
			rec := slog.NewRecord(time.Now(), level, "request", 0)
			rec.AddAttrs(attrs...)
			_ = h.Handle(r.Context(), rec)
		}
		return ans, err
	}
}
