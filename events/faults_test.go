package events

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/redis/go-redis/v9"
)

// A receiver down for a while, then up, gets every event; the endpoint says
// it is failing meanwhile, and healthy after.
func TestReceiverDownThenUp(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.recv.setStatus(http.StatusServiceUnavailable)
	cfg := e.config()
	cfg.Schedule = []time.Duration{50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond,
		800 * time.Millisecond, time.Second, time.Second, time.Second, time.Second, time.Second, time.Second}
	s := e.service(cfg)
	ep, _ := e.endpoint(s)
	e.run(s)
	var want []key
	for i := range 5 {
		id := fmt.Sprintf("11000000-0000-4000-8000-%012d", i+1)
		e.insertClient(id, "Cliente")
		want = append(want, key{ClientCreated, id})
	}
	e.recv.waitFor(want...) // attempted, refused
	failing := waitEndpoint(t, s, ep.ID, func(e Webhook) bool { return e.Health.FailingSince != nil })
	if !strings.Contains(failing.Health.LastError, "503") || !failing.Enabled {
		t.Errorf("failing endpoint's health: %+v", failing.Health)
	}
	e.recv.setStatus(http.StatusNoContent)
	healthy := waitEndpoint(t, s, ep.ID, func(e Webhook) bool { return e.Health.FailingSince == nil && e.Health.LastSuccessAt != nil })
	if healthy.Health.LastError != "" {
		t.Errorf("healthy endpoint keeps its last error: %+v", healthy.Health)
	}
	for _, k := range want {
		d := waitDelivery(t, s, ep.ID, e.recv, k, "delivered")
		if d.Attempts < 2 || len(d.Log) != d.Attempts || d.Log[0].Status != 503 || d.Log[len(d.Log)-1].Status != 204 {
			t.Errorf("%v: %d attempts, log %+v", k, d.Attempts, d.Log)
		}
	}
}

// An endpoint whose deliveries all fail for DisableAfter is disabled and
// says why; nothing more is attempted; enabling it again delivers what
// waited.
func TestEndpointDisabledAfterFailingForDays(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.recv.setStatus(http.StatusInternalServerError)
	cfg, clock := e.clocked()
	cfg.Schedule = []time.Duration{time.Hour, time.Hour, time.Hour, time.Hour}
	cfg.DisableAfter = 72 * time.Hour
	cfg.Retention = 30 * 24 * time.Hour
	s := e.service(cfg)
	ep, _ := e.endpoint(s)
	stop := e.run(s)
	e.insertClient(cli1, "Cliente")
	waitAttempts(t, s, ep.ID, e.recv, key{ClientCreated, cli1}, 1) // recorded at the clock's time
	for i := range 3 {
		clock.Add(25 * time.Hour) // the next retry is due; the failures last longer and longer
		waitAttempts(t, s, ep.ID, e.recv, key{ClientCreated, cli1}, i+2)
	}
	off := waitEndpoint(t, s, ep.ID, func(e Webhook) bool { return !e.Enabled })
	if off.Health.DisabledAt == nil || !strings.Contains(off.Health.DisabledReason, "72h") || !strings.Contains(off.Health.DisabledReason, "500") {
		t.Fatalf("disabled endpoint's health: %+v", off.Health)
	}
	// The retry falls due: a claim, as the dispatcher makes it on each
	// tick, takes nothing of the disabled endpoint. The dispatcher is
	// stopped first (its deliveries under way finished), so that this
	// claim is the only one.
	stop()
	n := len(e.recv.deliveries())
	clock.Add(25 * time.Hour)
	claimed, err := s.q.claim(context.Background(), 64)
	if err != nil {
		t.Fatal(err)
	}
	if len(claimed) != 0 || len(e.recv.deliveries()) != n {
		t.Fatalf("a disabled endpoint's delivery was claimed: %+v", claimed)
	}
	e.run(s)
	e.recv.setStatus(http.StatusOK)
	on := true
	if _, err := s.UpdateWebhook(context.Background(), ep.ID, Patch{Enabled: &on}); err != nil {
		t.Fatal(err)
	}
	waitDelivery(t, s, ep.ID, e.recv, key{ClientCreated, cli1}, "delivered")
}

// An instance that dies mid-delivery (it claimed the delivery and never
// said how it went) loses nothing: its lease ends and another instance
// makes the delivery.
func TestInstanceKilledMidDelivery(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cfg := e.config()
	dying := e.service(cfg)
	ep, _ := e.endpoint(dying)
	dying.q.setLeaseMargin(500 * time.Millisecond)
	// The dying instance only detects; its claim is made here and dropped.
	cfg2 := cfg
	detectOnly := e.service(cfg2)
	detectOnly.disp.concurrency = 0
	e.insertClient(cli1, "Cliente")
	ctx := context.Background()
	var claimed []claim
	stopDetect := e.runDetection(detectOnly)
	testenv.Eventually(t, "the dying instance's claim", func() error {
		var err error
		if claimed, err = dying.q.claim(ctx, 10); err != nil {
			t.Fatal(err)
		}
		return atLeast(len(claimed), 1, "claimed")
	})
	stopDetect()
	if len(claimed) != 1 || claimed[0].endpoint != ep.ID {
		t.Fatalf("claimed %+v", claimed)
	}
	// The dead instance's delivery is made by a live one once the lease ends.
	live := e.service(cfg)
	e.run(live)
	got := e.recv.waitFor(key{ClientCreated, cli1})
	if len(got) != 1 || got[0].header.Get("webhook-id") != claimed[0].event {
		t.Fatalf("deliveries %+v, want the claimed event %s once", got, claimed[0].event)
	}
	waitDelivery(t, live, ep.ID, e.recv, key{ClientCreated, cli1}, "delivered")
}

// runDetection runs s's detection only (no deliveries).
func (e *env) runDetection(s *Service) (stop func()) {
	s.disp.concurrency = 1
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		src := s.det.sources["TEST"]
		s.det.every(ctx, s.det.tick, "TEST", "changes", s.det.changesLoop("TEST", src))
	}()
	stop = func() { cancel(); <-done }
	return stop
}

// If the pipeline's state in Redis is lost mid-stream (a failover that lost
// the last writes, a restart empty), nothing is lost: detection starts again
// from its recovery window and sends what it finds under the same ids; a
// delivery that was waiting for its retry is made, with its id, although
// its change is older than the sweep reads back.
func TestRedisPipelineStateLost(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cfg := e.config()
	src := e.shifted(&cfg)
	cfg.Schedule = []time.Duration{time.Hour} // the failed delivery waits
	e.recv.setStatus(http.StatusServiceUnavailable)
	s := e.service(cfg)
	ep, _ := e.endpoint(s)
	e.run(s)
	e.insertClient(cli1, "Primeiro")
	first := e.recv.waitFor(key{ClientCreated, cli1})
	firstID := first[0].header.Get("webhook-id")
	waitDeliveryThat(t, s, ep.ID, e.recv, key{ClientCreated, cli1}, func(d Delivery) bool { return d.State == "pending" && d.NextAttemptAt != nil })
	// An hour later (past Sweep+Settle, within Recovery), everything but the
	// endpoints (configuration, kept as keys are) is lost.
	src.shift(time.Hour)
	ctx := context.Background()
	if lost := e.loseState(ctx, "ep:", "eps:", "cos:"); lost == 0 {
		t.Fatal("nothing to lose: the layout changed?")
	}
	e.recv.setStatus(http.StatusOK)
	const cli2 = "11000000-0000-4000-8000-000000000002"
	// Made after the loss, at the database's time as the pipeline now sees
	// it (an hour on): made at the real time, it would be an hour behind a
	// watermark that detection may already have moved to the shifted now,
	// a change committed an hour late, which nothing promises to find.
	e.exec(`INSERT INTO customers (id, company_id, name, created_at, updated_at) VALUES ($1, $2, 'Segundo', now() + interval '1 hour', now() + interval '1 hour')`, cli2, e.company)
	// The first client's event comes again, with its id, and is delivered.
	d := waitDeliveryThat(t, s, ep.ID, e.recv, key{ClientCreated, cli1}, func(d Delivery) bool { return d.State == "delivered" })
	if d.EventID != firstID {
		t.Errorf("the pending event came again as %s, was %s", d.EventID, firstID)
	}
	for _, got := range e.recv.deliveries() {
		if got.id == cli1 && got.header.Get("webhook-id") != firstID {
			t.Errorf("the first client's event came again as %s, was %s", got.header.Get("webhook-id"), firstID)
		}
	}
	waitDelivery(t, s, ep.ID, e.recv, key{ClientCreated, cli2}, "delivered")
}

// loseStateScript deletes, in one step, every events key of the prefix
// ARGV[1] but those whose rest starts with one of the other arguments.
var loseStateScript = redis.NewScript(`
local n = 0
for _, k in ipairs(redis.call('KEYS', ARGV[1] .. '*')) do
  local rest, kept = string.sub(k, #ARGV[1] + 1), false
  for i = 2, #ARGV do
    if string.sub(rest, 1, #ARGV[i]) == ARGV[i] then kept = true end
  end
  if not kept then redis.call('DEL', k); n = n + 1 end
end
return n`)

// loseState loses the pipeline's state but the keys of the kinds kept, at
// one instant, as a failover does: what survives is everything written up
// to a point. Deleting the keys one by one while the pipeline runs would
// lose, say, a watermark and keep the marker that a step wrote after it, a
// state no failover leaves. It answers how many keys were lost.
func (e *env) loseState(ctx context.Context, kept ...string) int {
	e.t.Helper()
	args := []any{e.prefix + "{events}:"}
	for _, k := range kept {
		args = append(args, k)
	}
	n, err := loseStateScript.Run(ctx, e.rdb, nil, args...).Int()
	if err != nil {
		e.t.Fatal(err)
	}
	return n
}

// Three instances share a backlog: every event arrives, none twice.
func TestThreeInstancesNoDuplicates(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cfg := e.config()
	first := e.service(cfg)
	all, _ := e.endpoint(first)
	one, _ := e.endpoint(first, "client.created") // a second endpoint, of one type
	const n = 300
	var want []key
	values := make([]string, 0, n)
	for i := range n {
		id := fmt.Sprintf("11000000-0000-4000-8000-%012d", i+1)
		values = append(values, fmt.Sprintf("('%s', '%s', 'Cliente %d')", id, e.company, i))
		want = append(want, key{ClientCreated, id})
	}
	e.exec(`INSERT INTO customers (id, company_id, name) VALUES ` + strings.Join(values, ", "))
	var stops []func()
	for range 3 {
		stops = append(stops, e.run(e.service(cfg)))
	}
	e.recv.waitFor(want...)
	testenv.Eventually(t, "every delivery", func() error {
		return atLeast(len(e.recv.deliveries()), 2*n, "deliveries")
	})
	// Nothing left queued or in flight: nothing more can be claimed. The
	// instances then stop, which waits for the deliveries under way: a
	// duplicate, if one was claimed, has arrived.
	e.waitQueue(first, all.ID, 0)
	e.waitQueue(first, one.ID, 0)
	for _, stop := range stops {
		stop()
	}
	got := e.recv.deliveries()
	if len(got) != 2*n {
		t.Fatalf("%d deliveries, want %d (each of %d events to 2 endpoints)", len(got), 2*n, n)
	}
	seen := map[string]int{}
	for _, d := range got {
		seen[d.header.Get("webhook-id")+" "+d.header.Get("webhook-signature")[:8]]++
	}
	ids := map[string]int{}
	for _, d := range got {
		ids[d.header.Get("webhook-id")]++
	}
	for id, c := range ids {
		if c != 2 {
			t.Errorf("event %s delivered %d times to 2 endpoints", id, c)
		}
	}
}

func waitEndpoint(t *testing.T, s *Service, id string, ok func(Webhook) bool) Webhook {
	t.Helper()
	var ep Webhook
	testenv.Eventually(t, "the endpoint's change", func() error {
		var err error
		if ep, err = s.Webhook(context.Background(), id); err != nil {
			t.Fatal(err)
		}
		if !ok(ep) {
			return fmt.Errorf("endpoint not there yet: %+v", ep)
		}
		return nil
	})
	return ep
}

// waitDelivery waits for the delivery of the event k names to reach state.
func waitDelivery(t *testing.T, s *Service, ep string, r *receiver, k key, state string) Delivery {
	t.Helper()
	return waitDeliveryThat(t, s, ep, r, k, func(d Delivery) bool { return d.State == state })
}

func waitAttempts(t *testing.T, s *Service, ep string, r *receiver, k key, n int) Delivery {
	t.Helper()
	return waitDeliveryThat(t, s, ep, r, k, func(d Delivery) bool { return d.Attempts >= n })
}

func waitDeliveryThat(t *testing.T, s *Service, ep string, r *receiver, k key, ok func(Delivery) bool) Delivery {
	t.Helper()
	var d Delivery
	testenv.Eventually(t, fmt.Sprintf("the delivery of %v", k), func() error {
		for _, got := range r.deliveries() {
			if got.parsed.Type == k.typ && got.id == k.id {
				var err error
				if d, err = s.Delivery(context.Background(), ep, got.header.Get("webhook-id")); err == nil && ok(d) {
					return nil
				}
			}
		}
		return fmt.Errorf("delivery not there yet: %+v", d)
	})
	return d
}
