package web

import (
	"bytes"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/internal/jsonlog"
	"github.com/invoicing-ao/gateway/invoicing"
)

// The access log writes the same line through jsonlog's Line (as the binary
// runs) as through any other slog handler, for answers and problems, known
// callers or not, traced or not.
func TestAccessLogLineSameOnBothPaths(t *testing.T) {
	caller := Caller{KeyID: "key_abc", Company: "b1600000-0000-4000-8000-000000000001", Mode: invoicing.Live}
	cases := []struct {
		name        string
		authed      bool
		traceparent bool
		ans         Answer
		err         error
	}{
		{"answer", true, false, Answer{Status: http.StatusOK, Body: map[string]string{"a": "b"}}, nil},
		{"unknown caller", false, false, Answer{}, &Error{Code: "invalid_body", Detail: "no"}},
		{"server error", true, true, Answer{}, &Error{Code: "internal_error", Detail: "x", Err: errors.New(`cause "quoted"`)}},
		{"unmatched", false, true, Answer{}, nil},
	}
	// The time and the latency differ between two runs; nothing else may.
	varying := regexp.MustCompile(`"time":"[^"]*"|"latencyMs":[0-9.e-]+`)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var lines [2]string
			for i, logger := range []func(*bytes.Buffer) slog.Handler{
				func(b *bytes.Buffer) slog.Handler { return jsonlog.New(b, nil) },
				func(b *bytes.Buffer) slog.Handler { return slog.NewJSONHandler(b, nil) },
			} {
				var buf bytes.Buffer
				c := newChain(Config{Logger: slog.New(logger(&buf)), Now: time.Now, Telemetry: &Telemetry{}})
				inner := func(w http.ResponseWriter, r *http.Request) (Answer, error) {
					st := StateOf(r.Context())
					if tc.name != "unmatched" {
						st.route = "GET /api/v1/v1/clients/:id"
					}
					if tc.authed {
						st.Identify(caller)
					}
					return tc.ans, tc.err
				}
				h := c.withRequestID(c.withTelemetry(c.accessLog(c.writeAnswers(inner))))
				req := httptest.NewRequest(http.MethodGet, "/api/v1/v1/clients/x?search=secret", nil)
				req.Header.Set("X-Request-Id", "req-1")
				if tc.traceparent {
					req.Header.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
				}
				_, _ = h(httptest.NewRecorder(), req)
				lines[i] = varying.ReplaceAllString(buf.String(), "")
			}
			if lines[0] != lines[1] {
				t.Errorf("jsonlog line:\n%s\nslog line:\n%s", lines[0], lines[1])
			}
			if !regexp.MustCompile(`"requestId":"req-1"`).MatchString(lines[0]) {
				t.Errorf("no request id in %s", lines[0])
			}
		})
	}
}
