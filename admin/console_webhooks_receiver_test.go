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
)

// flipReceiver is an integrator's receiver whose answer the test flips: it
// verifies each delivery with the secret the console showed, and answers
// 204, or 500 while failing.
type flipReceiver struct {
	srv      *httptest.Server
	mu       sync.Mutex
	verifier *client.WebhookVerifier
	failing  bool
	script   []string          // how the next deliveries fail, in turn: "hang up" or "empty 503"
	got      map[string]int    // event id: deliveries verified and taken
	what     map[string]string // event id: its type and its resource's id, as delivered
	refused  []string          // deliveries that did not verify: id, signatures and why
	step     string            // what the test was doing, for the refusals' report
}

func newFlipReceiver(t *testing.T) *flipReceiver {
	f := &flipReceiver{got: map[string]int{}, what: map[string]string{}}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.failing {
			http.Error(w, "boom: the ERP is down", http.StatusInternalServerError)
			return
		}
		if len(f.script) > 0 {
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
		var d struct{ ID string }
		_ = json.Unmarshal(ev.Data, &d)
		f.got[ev.ID]++
		f.what[ev.ID] = ev.Type + " " + d.ID
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *flipReceiver) trust(t *testing.T, secret string) {
	v, err := client.NewWebhookVerifier(client.WebhookConfig{Secrets: []string{secret}})
	if err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	f.verifier = v
	f.mu.Unlock()
}

// at names what the test does next, for the report of refused deliveries.
func (f *flipReceiver) at(step string) { f.mu.Lock(); f.step = step; f.mu.Unlock() }

func (f *flipReceiver) fail(on bool) { f.mu.Lock(); f.failing = on; f.mu.Unlock() }

// then fails the next deliveries as told, in turn.
func (f *flipReceiver) then(how ...string) { f.mu.Lock(); f.script = how; f.mu.Unlock() }

func (f *flipReceiver) count(id string) int { f.mu.Lock(); defer f.mu.Unlock(); return f.got[id] }

// delivered is the type and resource id an event arrived with; "" if it
// has not arrived.
func (f *flipReceiver) delivered(id string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.what[id]
}
