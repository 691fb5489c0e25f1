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

	"github.com/invoicing-ao/gateway/backend/gendata"
	"github.com/invoicing-ao/gateway/client"
)

// sleeps records the waits a client asked for, then waits them (really) or
// runs a hook instead.
type sleeps struct {
	mu    sync.Mutex
	waits []time.Duration
	hook  func() // nil: really wait
}

func (s *sleeps) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.waits = append(s.waits, d)
	hook := s.hook
	s.mu.Unlock()
	if hook != nil {
		hook()
		return ctx.Err()
	}
	select {
	case <-time.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *sleeps) taken() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.waits
	s.waits = nil
	return out
}

// A rate-limited call waits what the gateway's Retry-After says and goes
// through; each create carries an Idempotency-Key of its own, the same on
// its retries. A wait over the bound is not waited: the 429 is the answer.
func TestRetriesAfterRateLimit(t *testing.T) {
	t.Parallel()
	g := startGateway(t)
	var s sleeps
	a := g.api(t, client.Config{Sleep: s.sleep})
	ctx := context.Background()
	if _, err := g.admin.SetCompanyLimit(ctx, "client-tests@local", gendata.DemoCompanyA, "LIVE", 1, 1); err != nil {
		t.Fatal(err)
	}
	var keys []string
	var created []client.Id
	for i := range 2 {
		if _, err := a.ListClients(ctx, client.ListClientsParams{PageSize: ptr(1)}); err != nil {
			t.Fatal(err) // spends the one request of the burst
		}
		_, _ = g.requests(), s.taken()
		c, err := a.CreateClient(ctx, client.ClientInput{Name: fmt.Sprintf("Retry %d Lda", i)})
		if err != nil {
			t.Fatal(err)
		}
		got := g.requests()
		if len(got) < 2 || got[0].Method != http.MethodPost || got[0].IdempotencyKey == "" {
			t.Fatalf("create %d: the gateway saw %+v, want a POST refused then retried", i, got)
		}
		for _, r := range got[1:] {
			if r.IdempotencyKey != got[0].IdempotencyKey {
				t.Fatalf("create %d: keys %+v, want one key for all attempts", i, got)
			}
		}
		keys = append(keys, got[0].IdempotencyKey)
		if waits := s.taken(); len(waits) != len(got)-1 || waits[0] < time.Second || waits[0] > 1100*time.Millisecond {
			t.Fatalf("create %d: waits %v for %d attempts; want Retry-After (1 s) plus at most 10 %%", i, waits, len(got))
		}
		created = append(created, c.Id)
	}
	if keys[0] == keys[1] {
		t.Fatalf("two creates shared the key %s", keys[0])
	}
	if created[0] == created[1] {
		t.Fatalf("two creates, one client %s", created[0])
	}

	// A limit that refills in 1000 s (company B's): Retry-After is over
	// MaxRetryWait.
	if _, err := g.admin.SetCompanyLimit(ctx, "client-tests@local", gendata.DemoCompanyB, "LIVE", 0.001, 1); err != nil {
		t.Fatal(err)
	}
	b := g.api(t, client.Config{Sleep: s.sleep, CompanyID: gendata.DemoCompanyB})
	if _, err := b.ListClients(ctx, client.ListClientsParams{}); err != nil {
		t.Fatal(err) // spends the burst
	}
	_, err := b.ListClients(ctx, client.ListClientsParams{})
	expectProblem(t, err, 429, client.ProblemCodeRateLimitLive)
	if waits := s.taken(); len(waits) != 0 {
		t.Fatalf("waited %v for a Retry-After over the bound", waits)
	}
}

// A 503 (the database cut off) is retried for a read, and for a create that
// carries its Idempotency-Key; a create without one is not (it may have
// happened).
func TestRetriesWhenUnavailable(t *testing.T) {
	t.Parallel()
	g := startGateway(t)
	s := sleeps{hook: g.liveVia.Resume}
	a := g.api(t, client.Config{Sleep: s.sleep})
	ctx := context.Background()
	page, err := a.ListClients(ctx, client.ListClientsParams{PageSize: ptr(1)})
	if err != nil {
		t.Fatal(err)
	}
	_ = g.requests()

	g.liveVia.Cut()
	got, err := a.GetClient(ctx, page.Data[0].Id)
	if err != nil || got.Id != page.Data[0].Id {
		t.Fatalf("get after the database came back: %v %v", got, err)
	}
	if waits, seen := s.taken(), g.requests(); len(waits) != 1 || len(seen) != 2 || waits[0] < time.Second {
		t.Fatalf("waits %v, requests %+v: want one 503 waited for, then the answer", waits, seen)
	}

	g.liveVia.Cut()
	c, err := a.CreateClient(ctx, client.ClientInput{Name: "Depois da falha Lda"})
	if err != nil {
		t.Fatal(err)
	}
	seen := g.requests()
	if len(seen) != 2 || seen[0].IdempotencyKey == "" || seen[1].IdempotencyKey != seen[0].IdempotencyKey || len(s.taken()) != 1 {
		t.Fatalf("create: requests %+v", seen)
	}
	if _, err := a.GetClient(ctx, c.Id); err != nil {
		t.Fatal(err)
	}

	_ = g.requests()
	g.liveVia.Cut()
	res, err := a.Generated().CreateClientWithResponse(ctx, nil, client.ClientInput{Name: "Sem chave Lda"})
	g.liveVia.Resume()
	if err != nil || res.StatusCode() != http.StatusServiceUnavailable || len(g.requests()) != 1 || len(s.taken()) != 0 {
		t.Fatalf("a create without a key: %v %v; want its 503, not retried", res.Status(), err)
	}
	if res.ApplicationproblemJSON503 == nil || res.ApplicationproblemJSON503.Code != client.ProblemCodeDatabaseUnavailable {
		t.Fatalf("the generated client's 503: %s", res.Body)
	}
}

// The retry policy's edges, against a scripted server (the gateway cannot be
// made to answer these on demand): the bound on attempts, doubling waits,
// HTTP-date Retry-After, cancellation, and what is never retried.
func TestRetryPolicy(t *testing.T) {
	t.Parallel()
	type step struct {
		status     int
		retryAfter string
		code       string // default: the status's usual code
	}
	var (
		mu     sync.Mutex
		script []step
		calls  int
		onCall func()
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		st := step{status: 200}
		if calls < len(script) {
			st = script[calls]
		}
		calls++
		hook := onCall
		mu.Unlock()
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
	}))
	defer srv.Close()
	run := func(steps []step, cfg client.Config, call func(*client.API) error) (int, []time.Duration, error) {
		t.Helper()
		mu.Lock()
		script, calls = steps, 0
		mu.Unlock()
		s := sleeps{hook: func() {}} // record, do not wait
		cfg.Sleep = s.sleep
		cfg.BaseURL, cfg.APIKey, cfg.CompanyID = srv.URL, "igw_test_x", "c"
		a, err := client.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		err = call(a)
		mu.Lock()
		defer mu.Unlock()
		return calls, s.taken(), err
	}
	list := func(a *client.API) error {
		_, err := a.ListClients(context.Background(), client.ListClientsParams{})
		return err
	}
	unavailable := []step{{503, "1", ""}, {503, "1", ""}, {503, "1", ""}, {503, "1", ""}, {503, "1", ""}}

	// At most 3 retries, each wait at least twice the previous, +10 % at most.
	n, waits, err := run(unavailable, client.Config{}, list)
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
	if n, _, _ := run(unavailable, client.Config{MaxRetries: -1}, list); n != 1 {
		t.Errorf("MaxRetries -1: %d attempts", n)
	}
	if n, _, err := run([]step{{429, "2", ""}, {503, "1", ""}}, client.Config{MaxRetries: 5}, list); n != 3 || err != nil {
		t.Errorf("429 then 503 then 200: %d attempts, %v", n, err)
	}
	// Retry-After as an HTTP date; none at all means 1 s.
	date := time.Now().Add(30 * time.Second).UTC().Format(http.TimeFormat)
	if _, waits, err := run([]step{{429, date, ""}, {429, "", ""}}, client.Config{MaxRetryWait: 2 * time.Minute}, list); err != nil || len(waits) != 2 ||
		waits[0] < 25*time.Second || waits[0] > 34*time.Second || waits[1] < 50*time.Second {
		t.Errorf("date, then none: waits %v, %v", waits, err)
	}
	// A create without an Idempotency-Key is not retried after a 503, but
	// is after a 429 (refused before anything was done); a 500 never is.
	create := func(a *client.API) error {
		res, err := a.Generated().CreateClientWithResponse(context.Background(), nil, client.ClientInput{Name: "x"})
		if err == nil && res.StatusCode() != 200 {
			err = errors.New(res.Status())
		}
		return err
	}
	if n, _, _ := run(unavailable, client.Config{}, create); n != 1 {
		t.Errorf("POST without a key after a 503: %d attempts", n)
	}
	if n, _, _ := run([]step{{429, "1", ""}}, client.Config{}, create); n != 2 {
		t.Errorf("POST without a key after a 429: %d attempts", n)
	}
	if n, _, _ := run([]step{{500, "1", ""}}, client.Config{}, list); n != 1 {
		t.Errorf("a 500: %d attempts", n)
	}
	// A 409 idempotency_in_progress is waited out on a create with a key (the
	// retry gets the first attempt's answer), never another 409.
	keyed := func(a *client.API) error {
		_, err := a.CreateClient(context.Background(), client.ClientInput{Name: "x"})
		return err
	}
	if n, waits, err := run([]step{{409, "1", ""}, {409, "1", ""}}, client.Config{}, keyed); n != 3 || err != nil || len(waits) != 2 {
		t.Errorf("409 in progress twice, then 201: %d attempts, waits %v, %v", n, waits, err)
	}
	n, _, err = run([]step{{409, "", "nif_conflict"}}, client.Config{}, keyed)
	if p := expectProblem(t, err, 409, client.ProblemCodeNifConflict); n != 1 || p.Detail != "d" {
		t.Errorf("409 nif_conflict: %d attempts", n)
	}
	if n, _, _ := run([]step{{409, "1", ""}}, client.Config{}, create); n != 1 {
		t.Errorf("409 in progress without a key of ours: %d attempts", n)
	}
	// The caller's context ends a wait (the real timer, 1 h).
	ctx, cancel := context.WithCancel(context.Background())
	mu.Lock()
	script, calls, onCall = []step{{429, strconv.Itoa(3600), ""}}, 0, cancel
	mu.Unlock()
	a, err := client.New(client.Config{BaseURL: srv.URL, APIKey: "k", CompanyID: "c", MaxRetryWait: 2 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.ListClients(ctx, client.ListClientsParams{}); !errors.Is(err, context.Canceled) || calls != 1 {
		t.Errorf("cancelled during a wait: %d attempts, %v", calls, err)
	}
}

// Two attempts of one create at once, the first held in the database: the
// other meets 409 idempotency_in_progress, waits for it (the hook lets the
// database go and waits for the first to end), and gets its answer: one
// client, the same record for both.
func TestWaitsForTheRunningAttempt(t *testing.T) {
	t.Parallel()
	g := startGateway(t)
	ctx := context.Background()
	var (
		once     sync.Once
		finished = make(chan struct{})
		hooked   = make(chan struct{}, 2)
	)
	s := sleeps{hook: func() {
		hooked <- struct{}{}
		g.liveVia.Resume()
		select {
		case <-finished:
		case <-time.After(60 * time.Second):
		}
	}}
	a := g.api(t, client.Config{Sleep: s.sleep})
	if _, err := a.ListClients(ctx, client.ListClientsParams{PageSize: ptr(1)}); err != nil {
		t.Fatal(err) // the company is known: the creates need only Redis until their insert
	}
	key, in := client.NewIdempotencyKey(), client.ClientInput{Name: "Duas tentativas Lda", Nif: ptr("5417001111")}
	type result struct {
		c   *client.ClientRecord
		err error
	}
	results := make(chan result, 2)
	create := func() {
		c, err := a.CreateClientWithKey(ctx, key, in)
		once.Do(func() { close(finished) })
		results <- result{c, err}
	}
	g.liveVia.Pause()
	go create()
	go create()
	var got []result
	for range 2 {
		select {
		case r := <-results:
			got = append(got, r)
		case <-time.After(90 * time.Second):
			t.Fatal("the creates did not end")
		}
	}
	for _, r := range got {
		if r.err != nil {
			t.Fatal(r.err)
		}
	}
	if got[0].c.Id != got[1].c.Id || len(hooked) == 0 {
		t.Fatalf("clients %s and %s, %d waits: want one client, the other attempt waiting for it", got[0].c.Id, got[1].c.Id, len(hooked))
	}
	inProgress := 0
	for _, r := range g.requests() {
		if r.Method == http.MethodPost && r.IdempotencyKey != key {
			t.Fatalf("a POST with key %q, want %q", r.IdempotencyKey, key)
		}
		if r.Status == http.StatusConflict {
			inProgress++
		}
	}
	if inProgress == 0 {
		t.Fatal("no attempt met the other one running (409)")
	}
	if page, err := a.ListClients(ctx, client.ListClientsParams{Search: ptr("5417001111")}); err != nil || page.Total != 1 {
		t.Fatalf("clients with the NIF: %v %v", page, err)
	}
}
