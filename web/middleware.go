package web

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/netip"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/invoicing-ao/gateway/internal/jsonlog"
	"github.com/invoicing-ao/gateway/invoicing"
)

// Request facts travel in the context: one mutable record per request,
// made by the outermost middleware, lets inner layers (router, a route's
// authentication) tell outer ones (access log, telemetry) what they
// learned. The record is itself the context that carries it, and holds the
// backing array of the answer's own header values: one allocation for what
// took four.
type ctxKey struct{}

// State is a request's record: its id, its route, and its caller once a
// route has verified who it is.
type State struct {
	context.Context // the request's context before this layer
	id              string
	route           string        // the route's name, for logs, traces and metrics
	caller          Caller        // set once the caller is verified
	known           bool          // the caller is verified, whatever was answered after
	latency         time.Duration // measured by accessLog, for the log and the metrics
	// hdr backs header values set once per answer (X-Request-Id, ETag,
	// Content-Length, and SetHeader's): a one-element slice each, as
	// net/http keeps them.
	hdr    [5]string
	nset   int         // hdr's slots SetHeader has used
	header http.Header // the answer's
	slot   slot        // the routed handler's result (Router.serve)
	// What Addr reads.
	remoteAddr string
	reqHeader  http.Header
	proxies    []netip.Prefix
}

// Caller is who a request comes from, once a route has verified it: a
// company, in a mode, with one of its keys. It is all the layers outside
// the routes know of the caller: the access log, the span and the usage
// count name it.
type Caller struct {
	Company string
	Mode    invoicing.Mode
	KeyID   string
}

// Value is the record for ctxKey{}, and the parent's value for any other key.
func (st *State) Value(key any) any {
	if _, ok := key.(ctxKey); ok {
		return st
	}
	return st.Context.Value(key)
}

// StateOf is the record of the request whose context ctx is (an empty one
// outside a listener's chain).
func StateOf(ctx context.Context) *State {
	st, _ := ctx.Value(ctxKey{}).(*State)
	if st == nil {
		return &State{Context: ctx}
	}
	return st
}

// ID is the request's id, as X-Request-Id answers it.
func (st *State) ID() string { return st.id }

// Route is the name of the route that matched ("METHOD path").
func (st *State) Route() string { return st.route }

// Identify records the request's caller, once verified: the access log,
// the span and the usage count are then the caller's, also when a refusal
// follows.
func (st *State) Identify(c Caller) { st.caller, st.known = c, true }

// Caller is the request's caller, and whether it is known.
func (st *State) Caller() (Caller, bool) { return st.caller, st.known }

// routeName is the route for logs and metrics: "unmatched" when no route
// of the table matched.
func (st *State) routeName() string {
	if st.route == "" {
		return "unmatched"
	}
	return st.route
}

// Indexes of State.hdr; SetHeader's take those after.
const (
	hdrRequestID = iota
	hdrETag
	hdrContentLength
	hdrFree
)

// setHeader sets a header of the answer to v, backed by the record.
func (st *State) setHeader(h http.Header, name string, i int, v string) {
	st.hdr[i] = v
	h[name] = st.hdr[i : i+1 : i+1] // cap 1: an Add copies instead of writing into hdr
}

// SetHeader sets a header of the answer beside what a route returns (the
// rate limit's state, say), whatever the answer ends as, a problem
// included. name is in its canonical form (textproto), as it is set
// without copying; the first two values are backed by the record.
func (st *State) SetHeader(name, v string) {
	if st.header == nil {
		return // outside a listener's chain
	}
	if i := hdrFree + st.nset; i < len(st.hdr) {
		st.nset++
		st.setHeader(st.header, name, i, v)
		return
	}
	st.header[name] = []string{v}
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

// newRequestID is 96 random bits in hex. Ids need to be unique, not secret:
// the runtime's per-thread ChaCha8 generator, not crypto/rand's system call.
func newRequestID() string {
	var b [12]byte
	binary.LittleEndian.PutUint64(b[:8], rand.Uint64())
	binary.LittleEndian.PutUint32(b[8:], rand.Uint32())
	var h [24]byte
	hex.Encode(h[:], b[:])
	return string(h[:])
}

// withRequestID gives every request an id, echoed in X-Request-Id, and the
// state record the later layers fill in.
func (c *chain) withRequestID(next handler) handler {
	return func(w http.ResponseWriter, r *http.Request) (Answer, error) {
		id := r.Header.Get("X-Request-Id")
		if !saneRequestID(id) {
			id = newRequestID()
		}
		st := &State{Context: r.Context(), id: id, header: w.Header(),
			remoteAddr: r.RemoteAddr, reqHeader: r.Header, proxies: c.TrustedProxies}
		st.setHeader(st.header, "X-Request-Id", hdrRequestID, id)
		return next(w, r.WithContext(st))
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
	return func(w http.ResponseWriter, r *http.Request) (Answer, error) {
		n := len(r.Method) + 1 + len(r.RequestURI) + 1 + len(r.Proto) + 2 + len("Host: \r\n") + len(r.Host)
		for k, vs := range r.Header {
			for _, v := range vs {
				n += len(k) + len(v) + 4
			}
		}
		if n > MaxHeaderBytes {
			return Answer{}, &Error{Code: "headers_too_large",
				Detail: "The request line and headers must be at most " + strconv.Itoa(MaxHeaderBytes) + " bytes together."}
		}
		return next(w, r)
	}
}

// withBodyLimit bounds every request body to MaxBodyBytes: reading past it
// fails (ReadBody answers 413) and the connection is closed after the
// answer rather than drained.
func withBodyLimit(next handler) handler {
	return func(w http.ResponseWriter, r *http.Request) (Answer, error) {
		if r.Body != nil && r.Body != http.NoBody {
			r.Body = http.MaxBytesReader(w, r.Body, MaxBodyBytes)
		}
		return next(w, r)
	}
}

// withRecover turns a panic into a 500 problem instead of a dropped connection.
func withRecover(next handler) handler {
	return func(w http.ResponseWriter, r *http.Request) (ans Answer, err error) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				ans, err = Answer{}, &Error{Code: "internal_error", Detail: "An internal error occurred.", Err: fmt.Errorf("panic: %v", v)}
			}
		}()
		return next(w, r)
	}
}

// withSecurityHeaders sets the headers every API response needs: API answers
// are private to the caller and never to be sniffed as HTML.
func withSecurityHeaders(next handler) handler {
	return func(w http.ResponseWriter, r *http.Request) (Answer, error) {
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
func (c *chain) accessLog(next handler) handler {
	return func(w http.ResponseWriter, r *http.Request) (Answer, error) {
		start := c.Now()
		ans, err := next(w, r)
		end := c.Now()
		// One clock read each side of the request, for the line and for the
		// metrics (withTelemetry, outside this layer, reads st.latency).
		st := StateOf(r.Context())
		st.latency = end.Sub(start)
		level := slog.LevelInfo
		if ans.Status >= 500 {
			level = slog.LevelError
		}
		h := c.Logger.Handler()
		if !h.Enabled(r.Context(), level) {
			return ans, err
		}
		// jsonlog's Line where the handler is jsonlog's (as the binary runs):
		// the fields straight into the line, without a Record or attributes.
		if lh, ok := h.(*jsonlog.Handler); ok {
			if l := lh.Begin(end, level, "request"); l != nil {
				accessFields(l, st, r, ans, err)
				_ = l.End()
				return ans, err
			}
		}
		var attrs attrFields
		accessFields(&attrs, st, r, ans, err)
		// A Record without a caller's PC spares a runtime.Callers per
		// request (the line has no source anyway).
		rec := slog.NewRecord(end, level, "request", 0)
		rec.AddAttrs(attrs...)
		_ = h.Handle(r.Context(), rec)
		return ans, err
	}
}

// logFields is what an access log line is written to.
type logFields interface {
	Str(key, v string)
	Int(key string, v int)
	Float(key string, v float64)
}

// accessFields writes a request's access log fields to f.
func accessFields(f logFields, st *State, r *http.Request, ans Answer, err error) {
	f.Str("requestId", st.id)
	f.Str("method", r.Method)
	f.Str("route", st.routeName())
	f.Int("status", ans.Status)
	f.Int("bytes", ans.bytes)
	f.Float("latencyMs", float64(st.latency.Microseconds())/1000)
	if err != nil { // p, given to errors.As, is on the heap: only for errors
		var p *Error
		if errors.As(err, &p) {
			f.Str("code", p.Code)
			if ans.Status >= 500 && p.Err != nil {
				f.Str("error", p.Err.Error())
			}
		}
	}
	if st.known {
		f.Str("company", st.caller.Company)
		f.Str("keyId", st.caller.KeyID)
		f.Str("mode", string(st.caller.Mode))
	}
	if sc := trace.SpanContextFromContext(r.Context()); sc.IsValid() {
		f.Str("traceId", sc.TraceID().String())
		f.Str("spanId", sc.SpanID().String())
	}
}

// attrFields collects the fields as slog attributes, for other handlers.
type attrFields []slog.Attr

func (a *attrFields) Str(k, v string)           { *a = append(*a, slog.String(k, v)) }
func (a *attrFields) Int(k string, v int)       { *a = append(*a, slog.Int(k, v)) }
func (a *attrFields) Float(k string, v float64) { *a = append(*a, slog.Float64(k, v)) }
