package events

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
)

// A receiver's answer is read within bounds, its headers as its body: one
// that answers 200 with a megabyte of headers (which net/http would read
// whole, up to 10 MiB, for every delivery in flight) fails the attempt and
// says why; one with a few KiB of headers, as real servers send, is
// delivered.
func TestReceiverAnswerHeadersBounded(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := e.service(e.config())
	e.run(s)
	for _, c := range []struct {
		name      string
		headers   int // bytes of headers the receiver adds
		delivered bool
	}{
		{"a few KiB", 4 << 10, true},
		{"a megabyte", 1 << 20, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				pad := strings.Repeat("x", 1000)
				for i := range c.headers / 1024 {
					w.Header().Set("X-Pad-"+strconv.Itoa(i), pad)
				}
				w.WriteHeader(http.StatusOK)
			}))
			defer recv.Close()
			ep, _, err := s.CreateWebhook(context.Background(), NewWebhook{CompanyID: e.company, Mode: invoicing.Test, URL: recv.URL + "/hook"})
			if err != nil {
				t.Fatal(err)
			}
			ev, err := s.TestWebhook(context.Background(), ep.ID)
			if err != nil {
				t.Fatal(err)
			}
			a := firstAttempt(t, s, ep.ID, ev.ID)
			switch {
			case c.delivered && (a.Status != http.StatusOK || a.Error != ""):
				t.Errorf("attempt %+v, want delivered", a)
			case !c.delivered && (a.Status != 0 || !strings.Contains(a.Error, "16 KiB of headers")):
				t.Errorf("attempt %+v, want a failure naming the headers' size", a)
			}
		})
	}
}

// firstAttempt waits for the first attempt of an event's delivery.
func firstAttempt(t *testing.T, s *Service, endpointID, eventID string) Attempt {
	t.Helper()
	var d Delivery
	testenv.Eventually(t, "the first attempt recorded", func() error {
		var err error
		if d, err = s.Delivery(context.Background(), endpointID, eventID); err != nil {
			return err
		}
		return testenv.Want(len(d.Log) > 0, true, "an attempt in the log")
	})
	return d.Log[0]
}
