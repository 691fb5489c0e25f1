package client_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/client"
)

// The retry policy's edges, against a scripted server (the gateway cannot be
// made to answer these on demand): the bound on attempts, doubling waits,
// HTTP-date Retry-After, cancellation, and what is never retried.
func TestRetryPolicy(t *testing.T) {
	t.Parallel()
	srv := newScripted(t)
	checkRetryBounds(t, srv)
	checkRetriedCreates(t, srv)
	checkRetryCancelled(t, srv)
}

// unavailable is a script of more 503s than any retry bound.
var unavailable = []retryStep{{503, "1", ""}, {503, "1", ""}, {503, "1", ""}, {503, "1", ""}, {503, "1", ""}}

// checkRetryBounds checks the bound on attempts, the doubling waits and
// Retry-After's forms.
func checkRetryBounds(t *testing.T, srv *scripted) {
	t.Helper()
	// At most 3 retries, each wait at least twice the previous, +10 % at most.
	n, waits, err := srv.run(unavailable, client.Config{}, listClients)
	expectProblem(t, err, 503, client.ProblemCodeDatabaseUnavailable)
	if n != 4 || len(waits) != 3 {
		t.Fatalf("%d attempts, waits %v", n, waits)
	}
	for i, w := range waits {
		lo := time.Second << i
		if w < lo || w > lo+lo/10 {
			t.Errorf("wait %d: %v, want %v to %v", i, w, lo, lo+lo/10)
		}
	}
	if n, _, _ := srv.run(unavailable, client.Config{MaxRetries: -1}, listClients); n != 1 {
		t.Errorf("MaxRetries -1: %d attempts", n)
	}
	if n, _, err := srv.run([]retryStep{{429, "2", ""}, {503, "1", ""}}, client.Config{MaxRetries: 5}, listClients); n != 3 || err != nil {
		t.Errorf("429 then 503 then 200: %d attempts, %v", n, err)
	}
	// Retry-After as an HTTP date; none at all means 1 s.
	date := time.Now().Add(30 * time.Second).UTC().Format(http.TimeFormat)
	if _, waits, err := srv.run([]retryStep{{429, date, ""}, {429, "", ""}}, client.Config{MaxRetryWait: 2 * time.Minute}, listClients); err != nil || len(waits) != 2 ||
		waits[0] < 25*time.Second || waits[0] > 34*time.Second || waits[1] < 50*time.Second {
		t.Errorf("date, then none: waits %v, %v", waits, err)
	}
}

// checkRetriedCreates checks what is retried of a create, with and without
// an Idempotency-Key, and that a 500 never is.
func checkRetriedCreates(t *testing.T, srv *scripted) {
	t.Helper()
	// A create without an Idempotency-Key is not retried after a 503, but
	// is after a 429 (refused before anything was done); a 500 never is.
	if n, _, _ := srv.run(unavailable, client.Config{}, createWithoutKey); n != 1 {
		t.Errorf("POST without a key after a 503: %d attempts", n)
	}
	if n, _, _ := srv.run([]retryStep{{429, "1", ""}}, client.Config{}, createWithoutKey); n != 2 {
		t.Errorf("POST without a key after a 429: %d attempts", n)
	}
	if n, _, _ := srv.run([]retryStep{{500, "1", ""}}, client.Config{}, listClients); n != 1 {
		t.Errorf("a 500: %d attempts", n)
	}
	// A 409 idempotency_in_progress is waited out on a create with a key (the
	// retry gets the first attempt's answer), never another 409.
	if n, waits, err := srv.run([]retryStep{{409, "1", ""}, {409, "1", ""}}, client.Config{}, createWithKey); n != 3 || err != nil || len(waits) != 2 {
		t.Errorf("409 in progress twice, then 201: %d attempts, waits %v, %v", n, waits, err)
	}
	n, _, err := srv.run([]retryStep{{409, "", "nif_conflict"}}, client.Config{}, createWithKey)
	if p := expectProblem(t, err, 409, client.ProblemCodeNifConflict); n != 1 || p.Detail != "d" {
		t.Errorf("409 nif_conflict: %d attempts", n)
	}
	if n, _, _ := srv.run([]retryStep{{409, "1", ""}}, client.Config{}, createWithoutKey); n != 1 {
		t.Errorf("409 in progress without a key of ours: %d attempts", n)
	}
}

// checkRetryCancelled checks that the caller's context ends a wait (the
// real timer, 1 h).
func checkRetryCancelled(t *testing.T, srv *scripted) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	srv.mu.Lock()
	srv.script, srv.calls, srv.onCall = []retryStep{{429, strconv.Itoa(3600), ""}}, 0, cancel
	srv.mu.Unlock()
	a, err := client.New(client.Config{BaseURL: srv.srv.URL, APIKey: "k", CompanyID: "c", MaxRetryWait: 2 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	_, err = a.ListClients(ctx, client.ListClientsParams{})
	srv.mu.Lock()
	calls := srv.calls
	srv.mu.Unlock()
	if !errors.Is(err, context.Canceled) || calls != 1 {
		t.Errorf("cancelled during a wait: %d attempts, %v", calls, err)
	}
}

func listClients(a *client.API) error {
	_, err := a.ListClients(context.Background(), client.ListClientsParams{})
	return err
}

// createWithoutKey creates through the generated client, which sends no
// Idempotency-Key.
func createWithoutKey(a *client.API) error {
	res, err := a.Generated().CreateClientWithResponse(context.Background(), nil, client.ClientInput{Name: "x"})
	if err == nil && res.StatusCode() != 200 {
		err = errors.New(res.Status())
	}
	return err
}

// createWithKey creates through the API, which sends an Idempotency-Key.
func createWithKey(a *client.API) error {
	_, err := a.CreateClient(context.Background(), client.ClientInput{Name: "x"})
	return err
}

// retryStep is one scripted answer.
type retryStep struct {
	status     int
	retryAfter string
	code       string // default: the status's usual code
}

// scripted is a server that answers each request with the next step of its
// script, then 200 (201 to a POST).
type scripted struct {
	t      *testing.T
	srv    *httptest.Server
	mu     sync.Mutex
	script []retryStep
	calls  int
	onCall func()
}

// newScripted starts a scripted server, closed when the test ends.
func newScripted(t *testing.T) *scripted {
	s := &scripted{t: t}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *scripted) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	st := retryStep{status: 200}
	if s.calls < len(s.script) {
		st = s.script[s.calls]
	}
	s.calls++
	hook := s.onCall
	s.mu.Unlock()
	if hook != nil {
		hook()
	}
	if st.status == 200 && r.Method == http.MethodPost {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprint(w, `{"id":"3b9a8f51-2c4d-4e6f-8a1b-2c3d4e5f6a7b","name":"x","nif":null,"email":null,"phone":null,"address":null,"type":null,"createdAt":"2026-03-01T09:15:02.120Z"}`)
		return
	}
	if st.status == 200 {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"data":[],"total":0,"page":1,"pageSize":20}`)
		return
	}
	if st.retryAfter != "" {
		w.Header().Set("Retry-After", st.retryAfter)
	}
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(st.status)
	code := map[int]string{409: "idempotency_in_progress", 429: "rate_limit_live", 503: "database_unavailable", 500: "internal_error"}[st.status]
	if st.code != "" {
		code = st.code
	}
	fmt.Fprintf(w, `{"type":"/api/docs/errors#%s","title":"t","status":%d,"detail":"d","code":"%s","requestId":"r1"}`, code, st.status, code)
}

// run makes call on a client of the server with cfg, the server answering
// steps; it returns the attempts the server saw, the waits the client
// asked for (recorded, not waited) and call's error.
func (s *scripted) run(steps []retryStep, cfg client.Config, call func(*client.API) error) (int, []time.Duration, error) {
	s.t.Helper()
	s.mu.Lock()
	s.script, s.calls = steps, 0
	s.mu.Unlock()
	sl := sleeps{hook: func() {}} // record, do not wait
	cfg.Sleep = sl.sleep
	cfg.BaseURL, cfg.APIKey, cfg.CompanyID = s.srv.URL, "igw_test_x", "c"
	a, err := client.New(cfg)
	if err != nil {
		s.t.Fatal(err)
	}
	err = call(a)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls, sl.taken(), err
}
