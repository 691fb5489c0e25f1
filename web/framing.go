package web

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"sync"
)

// Requests whose length is ambiguous are refused, and their connection
// closed (RFC 9112, section 6.1). A request with both Content-Length and
// Transfer-Encoding is read by net/http as chunked, the length dropped, and
// the connection kept; a proxy in front that trusts the length instead
// would see another request where the gateway sees a body (request
// smuggling). An HTTP/1.0 request with Transfer-Encoding is as ambiguous.
// net/http removes both headers before any handler sees the request, so
// each connection's bytes are watched as they are read (framingConn): the
// heads of its requests are parsed for these two headers, and their bodies
// skipped by the same rules net/http follows (a length, or chunks and
// trailers), so that the next head is found where net/http finds it. The
// first layers of the chain (withFraming) then take, for each request, what
// its head held. A head is matched to its request by its method and target:
// a connection whose bytes the watcher cannot follow (what net/http
// refuses and closes anyway) is no longer watched, and never makes a
// request refused.

// framing is what a request's head says of its length.
type framing uint8

const (
	framingClear     framing = iota
	framingBoth              // Content-Length and Transfer-Encoding
	framingHTTP10TE          // HTTP/1.0 with Transfer-Encoding
	maxPendingHeads  = 64    // heads read ahead of their handling (pipelining)
	maxWatchedValue  = 64    // bytes kept of a Content-Length or Transfer-Encoding
	maxChunkSizeLine = 16    // hex digits of a chunk's size (net/http's bound)
)

// head is one request's head as read: its method and target's hash, and
// its framing.
type head struct {
	key uint64
	f   framing
}

// framingConn is a connection whose read bytes are watched.
type framingConn struct {
	net.Conn
	mu    sync.Mutex
	p     framer
	heads []head
}

func (c *framingConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 {
		c.mu.Lock()
		c.p.feed(b[:n], c.push)
		c.mu.Unlock()
	}
	return n, err
}

// CloseWrite lets net/http half-close the connection after an answer it
// ends with, so that the client reads the answer before the close (the
// body of a refused request is left unread).
func (c *framingConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// push queues a head (the lock is held).
func (c *framingConn) push(h head) {
	if len(c.heads) == maxPendingHeads {
		c.p.lose()
		c.heads = c.heads[:0]
		return
	}
	c.heads = append(c.heads, h)
}

// take returns the framing of the request of method and target: the first
// queued head of that request, those before it (requests net/http answered
// itself) dropped. None: the connection is not followed any more.
func (c *framingConn) take(method, target string) framing {
	key := hashRequest(method, target)
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, h := range c.heads {
		if h.key == key {
			c.heads = append(c.heads[:0], c.heads[i+1:]...)
			return h.f
		}
	}
	c.heads = c.heads[:0]
	c.p.lose()
	return framingClear
}

// FNV-1a, over "METHOD SP target" as the request line has them.
const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

func hashRequest(method, target string) uint64 {
	h := uint64(fnvOffset)
	for i := 0; i < len(method); i++ {
		h = (h ^ uint64(method[i])) * fnvPrime
	}
	h = (h ^ ' ') * fnvPrime
	for i := 0; i < len(target); i++ {
		h = (h ^ uint64(target[i])) * fnvPrime
	}
	return h
}

// framingListener watches the connections it accepts.
type framingListener struct{ net.Listener }

func (l framingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &framingConn{Conn: c}, nil
}

type framingKey struct{}

// framingContext gives each request the watched connection it came on
// (http.Server.ConnContext).
func framingContext(ctx context.Context, c net.Conn) context.Context {
	if fc, ok := c.(*framingConn); ok {
		return context.WithValue(ctx, framingKey{}, fc)
	}
	return ctx
}

// withFraming refuses a request whose head was ambiguous, and closes its
// connection after the answer.
func withFraming(next handler) handler {
	return func(w http.ResponseWriter, r *http.Request) (Answer, error) {
		fc, _ := r.Context().Value(framingKey{}).(*framingConn)
		if fc == nil {
			return next(w, r)
		}
		var detail string
		switch fc.take(r.Method, r.RequestURI) {
		case framingClear:
			return next(w, r)
		case framingBoth:
			detail = "The request has both Content-Length and Transfer-Encoding, so its length is ambiguous (RFC 9112, section 6.1): send one of them. The connection is closed."
		case framingHTTP10TE:
			detail = "An HTTP/1.0 request cannot use Transfer-Encoding (RFC 9112, section 6.1): send Content-Length, or use HTTP/1.1. The connection is closed."
		}
		w.Header().Set("Connection", "close")
		return Answer{}, &Error{Code: "invalid_framing", Detail: detail}
	}
}

// lowerByte is b's ASCII letters in lower case.
func lowerByte(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// equalFold reports whether b is s (lower case) in any letter case.
func equalFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range b {
		if lowerByte(b[i]) != s[i] {
			return false
		}
	}
	return true
}

// trimOWS removes spaces and tabs around b.
func trimOWS(b []byte) []byte { return bytes.Trim(b, " \t") }
