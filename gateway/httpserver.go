package gateway

import (
	"log"
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

// NewHTTPServer is how the binary serves both listeners: h behind the
// connection limits of c.
func NewHTTPServer(h http.Handler, c HTTPConfig) *http.Server {
	or := func(d, def time.Duration) time.Duration {
		if d <= 0 {
			return def
		}
		return d
	}
	if c.MaxHeaderBytes <= 0 {
		c.MaxHeaderBytes = 4 * MaxHeaderBytes
	}
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: or(c.ReadHeaderTimeout, 5*time.Second),
		ReadTimeout:       or(c.ReadTimeout, 15*time.Second),
		WriteTimeout:      or(c.WriteTimeout, 30*time.Second),
		IdleTimeout:       or(c.IdleTimeout, 120*time.Second),
		MaxHeaderBytes:    c.MaxHeaderBytes,
		ErrorLog:          c.ErrorLog,
	}
}
