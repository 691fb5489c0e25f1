package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/invoicing-ao/gateway/client"
)

// hookPrinter is a webhook receiver that prints each delivery it gets on
// one line, after verifying its signature as an integrator's receiver
// would (the Go client's verifier), with how long after its change it
// came: the demo's receiver. Both of company
// A's endpoints, LIVE and TEST, point at it, at one URL: each event is
// printed with the mode its body names.
type hookPrinter struct {
	mu       sync.Mutex
	w        io.Writer
	verifier *client.WebhookVerifier // nil until trust: deliveries are refused
}

// trust sets the signing secrets deliveries must be signed with.
func (h *hookPrinter) trust(secrets ...string) error {
	v, err := client.NewWebhookVerifier(client.WebhookConfig{Secrets: secrets})
	if err != nil {
		return err
	}
	h.mu.Lock()
	h.verifier = v
	h.mu.Unlock()
	return nil
}

func (h *hookPrinter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil || r.Method != http.MethodPost {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.verifier == nil {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	ev, err := h.verifier.Verify(r.Header, body)
	if err != nil {
		fmt.Fprintf(h.w, "webhook refused: %v\n", err)
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	fmt.Fprintf(h.w, "webhook %s %-28s %s  %s  (signature verified)  %s after the change\n", ev.Mode, ev.Type, ev.ID, describeData(ev.Data), delay(time.Since(ev.Timestamp)))
	w.WriteHeader(http.StatusNoContent)
}

// delay is how long after its change (the event's timestamp: the time the
// database recorded) an event arrived, as the demo prints it: to the
// hundredth of a second, to the second past a minute (an issue recorded
// long before its event, an invoice overdue since midnight).
func delay(d time.Duration) string {
	if d < time.Minute {
		return fmt.Sprintf("%.2f s", max(d, 0).Seconds())
	}
	return d.Round(time.Second).String()
}

// describeData names an event's resource: an invoice's number and status,
// a client's name, and the id.
func describeData(data json.RawMessage) string {
	var d struct {
		ID, Number, Status, Name string
		Transmission             *struct{ Status string }
	}
	_ = json.Unmarshal(data, &d)
	switch {
	case d.Number != "":
		s := fmt.Sprintf("invoice %s %s", d.Number, d.Status)
		if d.Transmission != nil {
			s += ", AGT " + d.Transmission.Status
		}
		return s + " " + d.ID
	case d.Name != "":
		return fmt.Sprintf("client %q %s", d.Name, d.ID)
	}
	return d.ID
}
