package client_test

import (
	"context"
	"fmt"
	"net/http"
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
	if _, err := g.admin.Limits.SetCompanyLimit(ctx, "client-tests@local", gendata.DemoCompanyA, "LIVE", 1, 1); err != nil {
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
	if _, err := g.admin.Limits.SetCompanyLimit(ctx, "client-tests@local", gendata.DemoCompanyB, "LIVE", 0.001, 1); err != nil {
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
