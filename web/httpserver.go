package web

import (
	"log"
	"net"
	"net/http"
	"time"
)

// HTTPConfig bounds what one connection may cost an instance: how long a
// caller may take to send its headers and body, and how large the headers
// may be. Zero values mean the defaults named beside each field.
type HTTPConfig struct {
	// ReadHeaderTimeout cuts a client that has not sent its whole request
	// head in time (slowloris); zero means 5s.
	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration // whole request, body included; zero means 15s
	WriteTimeout      time.Duration // zero means 30s
	IdleTimeout       time.Duration // keep-alive; zero means 120s
	// MaxHeaderBytes is where net/http stops reading a request head and
	// answers 431 itself, in plain text (with 4 KiB of slack); zero means
	// 4 × MaxHeaderBytes (64 KiB). Below it, both listeners' handlers answer
	// heads over MaxHeaderBytes with a problem+json 431 (withHeaderLimit).
	MaxHeaderBytes int
	ErrorLog       *log.Logger // nil means the log package's standard logger
}

// HTTPServer is an http.Server that watches the framing of the requests it
// serves (framing.go): its Serve does, on every connection it accepts.
type HTTPServer struct{ *http.Server }

// Serve serves ln's connections, each watched.
func (s HTTPServer) Serve(ln net.Listener) error { return s.Server.Serve(framingListener{ln}) }

// ListenAndServe is Serve on a listener of the server's Addr.
func (s HTTPServer) ListenAndServe() error {
	ln, err := net.Listen("tcp", s.Addr)
	if err != nil {
		return err
	}
	return s.Serve(ln)
}

// NewHTTPServer is how the binary serves both listeners: h behind the
// connection limits of c, each connection's requests watched for an
// ambiguous length.
func NewHTTPServer(h http.Handler, c HTTPConfig) HTTPServer {
	or := func(d, def time.Duration) time.Duration {
		if d <= 0 {
			return def
		}
		return d
	}
	if c.MaxHeaderBytes <= 0 {
		c.MaxHeaderBytes = 4 * MaxHeaderBytes
	}
	return HTTPServer{&http.Server{
		Handler:           h,
		ConnContext:       framingContext,
		ReadHeaderTimeout: or(c.ReadHeaderTimeout, 5*time.Second),
		ReadTimeout:       or(c.ReadTimeout, 15*time.Second),
		WriteTimeout:      or(c.WriteTimeout, 30*time.Second),
		IdleTimeout:       or(c.IdleTimeout, 120*time.Second),
		MaxHeaderBytes:    c.MaxHeaderBytes,
		ErrorLog:          c.ErrorLog,
	}}
}
