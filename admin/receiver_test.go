package admin_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/invoicing-ao/gateway/client"
	"github.com/invoicing-ao/gateway/internal/testenv"
)

// receiver is an integrator's webhook receiver: it verifies each delivery
// with the Go client's verifier and the secret it was told to trust, as an
// integrator would, and keeps what it took. It answers 503 until it trusts
// a secret, and fails on the test's say (fail, then).
type receiver struct {
	srv      *httptest.Server
	mu       sync.Mutex
	verifier *client.WebhookVerifier
	failing  bool
	script   []string               // how the next deliveries fail, in turn: "hang up" or "empty 503"
	got      []*client.WebhookEvent // deliveries verified and taken, in order
	refused  []string               // deliveries that did not verify: id, signatures and why
	step     string                 // what the test was doing, for the refusals' report
}

func newReceiver(t *testing.T) *receiver {
	f := &receiver{}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *receiver) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case f.verifier == nil:
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	case f.failing:
		http.Error(w, "boom: the ERP is down", http.StatusInternalServerError)
		return
	case len(f.script) > 0:
		how := f.script[0]
		f.script = f.script[1:]
		if how == "hang up" {
			if c, _, err := w.(http.Hijacker).Hijack(); err == nil {
				c.Close()
			}
			return
		}
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	ev, err := f.verifier.Verify(r.Header, body)
	if err != nil {
		f.refused = append(f.refused, fmt.Sprintf("during %q: %s at %s (%d signatures): %v", f.step, r.Header.Get("webhook-id"),
			r.Header.Get("webhook-timestamp"), len(strings.Fields(r.Header.Get("webhook-signature"))), err))
		http.Error(w, "bad signature", http.StatusBadRequest)
		return
	}
	f.got = append(f.got, ev)
	w.WriteHeader(http.StatusNoContent)
}

// trust verifies the deliveries from now on with secret.
func (f *receiver) trust(t *testing.T, secret string) {
	v, err := client.NewWebhookVerifier(client.WebhookConfig{Secrets: []string{secret}})
	if err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	f.verifier = v
	f.mu.Unlock()
}

// at names what the test does next, for the report of refused deliveries.
func (f *receiver) at(step string) { f.mu.Lock(); f.step = step; f.mu.Unlock() }

func (f *receiver) fail(on bool) { f.mu.Lock(); f.failing = on; f.mu.Unlock() }

// then fails the next deliveries as told, in turn.
func (f *receiver) then(how ...string) { f.mu.Lock(); f.script = how; f.mu.Unlock() }

// refusals are the deliveries that did not verify.
func (f *receiver) refusals() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.refused...)
}

// count is how many times the event arrived, verified.
func (f *receiver) count(id string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, ev := range f.got {
		if ev.ID == id {
			n++
		}
	}
	return n
}

// delivered is the type and resource id an event arrived with; "" if it
// has not arrived.
func (f *receiver) delivered(id string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, ev := range f.got {
		if ev.ID == id {
			return ev.Type + " " + resourceID(ev)
		}
	}
	return ""
}

// wait waits for an event of type typ about the resource id to arrive.
func (f *receiver) wait(t *testing.T, typ, id string) *client.WebhookEvent {
	t.Helper()
	var found *client.WebhookEvent
	testenv.Eventually(t, typ+" of "+id+" delivered", func() error {
		f.mu.Lock()
		defer f.mu.Unlock()
		for _, ev := range f.got {
			if ev.Type == typ && resourceID(ev) == id {
				found = ev
				return nil
			}
		}
		return fmt.Errorf("%d events delivered, none of them", len(f.got))
	})
	return found
}

// resourceID is the id of the resource an event is about.
func resourceID(ev *client.WebhookEvent) string {
	var d struct{ ID string }
	_ = json.Unmarshal(ev.Data, &d)
	return d.ID
}
