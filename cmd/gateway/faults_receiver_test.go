package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/invoicing-ao/gateway/client"
	"github.com/invoicing-ao/gateway/internal/testenv"
)

// receiver is an integrator's webhook endpoint: it verifies every delivery
// with the endpoint's signing secret (the Go client's verifier) and counts
// what it accepted, per event (webhook-id) and per change (its type and
// the id of the invoice or client it is about). While refusing, it answers
// 503 and counts nothing, as a receiver that is down.
type receiver struct {
	*httptest.Server
	t          *testing.T
	mu         sync.Mutex
	verifier   *client.WebhookVerifier
	refusing   bool
	unverified int
	events     map[string]int    // webhook-id → deliveries accepted
	changes    map[string]string // "type id" → its event's webhook-id
	hold       chan struct{}     // non-nil: deliveries wait for it to close
	held       chan struct{}     // closed once a delivery waits on hold
}

func newReceiver(t *testing.T) *receiver {
	rc := &receiver{t: t, events: map[string]int{}, changes: map[string]string{}}
	rc.Server = httptest.NewServer(http.HandlerFunc(rc.serve))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *receiver) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	hold, held := rc.hold, rc.held
	rc.mu.Unlock()
	if hold != nil {
		select {
		case <-held:
		default:
			close(held)
		}
		<-hold
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.verifier == nil || rc.refusing {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	ev, err := rc.verifier.Verify(r.Header, body)
	if err != nil {
		rc.unverified++
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	var d struct{ ID string }
	_ = json.Unmarshal(ev.Data, &d)
	rc.events[ev.ID]++
	rc.changes[ev.Type+" "+d.ID] = ev.ID
	w.WriteHeader(http.StatusNoContent)
}

// trust makes the receiver verify with secret.
func (rc *receiver) trust(secret string) {
	rc.t.Helper()
	v, err := client.NewWebhookVerifier(client.WebhookConfig{Secrets: []string{secret}})
	if err != nil {
		rc.t.Fatal(err)
	}
	rc.mu.Lock()
	rc.verifier = v
	rc.mu.Unlock()
}

// refuse makes the receiver answer 503 (on) or take deliveries (off).
func (rc *receiver) refuse(on bool) {
	rc.mu.Lock()
	rc.refusing = on
	rc.mu.Unlock()
}

// holdNext makes deliveries wait until release; the channel it returns is
// closed once one is waiting.
func (rc *receiver) holdNext() (waiting <-chan struct{}, release func()) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.hold, rc.held = make(chan struct{}), make(chan struct{})
	hold := rc.hold
	var once sync.Once
	return rc.held, func() {
		once.Do(func() {
			rc.mu.Lock()
			rc.hold = nil
			rc.mu.Unlock()
			close(hold)
		})
	}
}

// waitFor waits until the receiver has accepted an event of each change
// ("type id") and returns their webhook-ids.
func (rc *receiver) waitFor(changes ...string) []string {
	rc.t.Helper()
	var ids []string
	testenv.Eventually(rc.t, "a verified delivery of each change", func() error {
		rc.mu.Lock()
		var missing []string
		ids = ids[:0]
		for _, c := range changes {
			if id, ok := rc.changes[c]; ok {
				ids = append(ids, id)
			} else {
				missing = append(missing, c)
			}
		}
		unverified := rc.unverified
		rc.mu.Unlock()
		if unverified > 0 {
			rc.t.Fatalf("%d deliveries did not verify", unverified)
		}
		if len(missing) > 0 {
			return fmt.Errorf("none yet of: %s", strings.Join(missing, ", "))
		}
		return nil
	})
	return ids
}

// accepted is how many times the receiver accepted the event of webhook-id.
func (rc *receiver) accepted(id string) int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.events[id]
}

// duplicates lists the events accepted more than once, with their counts.
func (rc *receiver) duplicates() []string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var d []string
	for c, id := range rc.changes {
		if n := rc.events[id]; n > 1 {
			d = append(d, fmt.Sprintf("%s (%d times)", c, n))
		}
	}
	sort.Strings(d)
	return d
}

// waitAccepted waits until the receiver has accepted the event of
// webhook-id n times.
func waitAccepted(t *testing.T, rc *receiver, id string, n int) {
	t.Helper()
	testenv.Eventually(t, fmt.Sprintf("event %s to be accepted %d times", id, n), func() error {
		return testenv.Want(rc.accepted(id) >= n, true, fmt.Sprintf("accepted %d times", rc.accepted(id)))
	})
}
