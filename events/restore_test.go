package events

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
)

// importState imports st as `gateway state import` does (state.Import: the
// plan, then its writes in one transaction).
func importState(t *testing.T, s *Service, st State) *ImportPlan {
	t.Helper()
	ctx := context.Background()
	raw, err := json.Marshal(st) // as through the file
	if err != nil {
		t.Fatal(err)
	}
	var back State
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	plan, err := s.PlanImport(ctx, back)
	if err != nil {
		t.Fatal(err)
	}
	pipe := s.rdb.TxPipeline()
	plan.Queue(ctx, 0, pipe)
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	return plan
}

// A Redis restarted empty while the gateway runs, then the last export
// imported: every change of the window reaches the restored endpoint,
// signed with its secret of before (each delivery verified): one waiting
// for its retry when the export was taken, one made during the outage
// (which detection, finding no endpoint, passed by), and one after the
// import. Nothing is lost, and the one delivered before the export is not
// delivered again: detection resumes at the export's resume point (the
// earliest event still to deliver then), not at the start of the recovery
// window.
func TestRestoreAfterLossDeliversTheWindow(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cfg := e.config()
	src := e.shifted(&cfg)
	cfg.Secrets = keyring(t, newSealKey(t))
	cfg.Schedule = []time.Duration{time.Hour} // the failed delivery waits
	s := e.service(cfg)
	ep, secret := e.endpoint(s)
	e.run(s)
	const cli0, cli2, cli3 = "11000000-0000-4000-8000-000000000000", "11000000-0000-4000-8000-000000000002", "11000000-0000-4000-8000-000000000003"
	e.insertClient(cli1, "Entregue antes")
	e.verified(key{ClientCreated, cli1}, secret)
	waitDelivery(t, s, ep.ID, e.recv, key{ClientCreated, cli1}, "delivered")
	e.recv.setStatus(http.StatusServiceUnavailable)
	e.insertClient(cli0, "Pendente")
	waitDeliveryThat(t, s, ep.ID, e.recv, key{ClientCreated, cli0}, func(d Delivery) bool { return d.State == "pending" && d.NextAttemptAt != nil })
	exported, err := s.ExportState(context.Background())
	if err != nil || len(exported.Webhooks) != 1 {
		t.Fatalf("export: %+v %v", exported, err)
	}

	// The loss, the gateway still running: detection finds no endpoint and
	// moves on past a change made meanwhile. The import comes an hour
	// later, as the pipeline sees it: past what the sweep reads back.
	if e.loseState(context.Background()) == 0 {
		t.Fatal("nothing lost")
	}
	e.recv.setStatus(http.StatusOK)
	e.insertClient(cli2, "Durante a perda")
	src.shift(time.Hour)
	e.waitWatermarkPast(s, time.Now().Add(time.Hour))

	importState(t, s, exported)
	e.exec(`INSERT INTO customers (id, company_id, name, created_at, updated_at) VALUES ($1, $2, 'Depois', now() + interval '1 hour', now() + interval '1 hour')`, cli3, e.company)
	for _, k := range []key{{ClientCreated, cli0}, {ClientCreated, cli2}, {ClientCreated, cli3}} {
		waitDelivery(t, s, ep.ID, e.recv, k, "delivered")
	}
	want := []key{{ClientCreated, cli0}, {ClientCreated, cli1}, {ClientCreated, cli2}, {ClientCreated, cli3}}
	wh, _ := standardwebhooks.NewWebhook(secret)
	ok := map[string]int{}
	for _, d := range e.recv.deliveries() {
		if err := wh.Verify(d.body, d.header); err != nil {
			t.Fatalf("%s of %s: signature: %v", d.parsed.Type, d.id, err)
		}
		if d.status == http.StatusOK {
			ok[d.id]++
		}
	}
	lost, dup := 0, 0
	for _, k := range want {
		switch n := ok[k.id]; {
		case n == 0:
			lost++
		case n > 1:
			dup += n - 1
			t.Errorf("%s delivered %d times: what was delivered before the export is not sent again, and the rest was not delivered before the loss", k.id, n)
		}
	}
	t.Logf("after the loss and the import: %d events of the window, %d lost, %d delivered again", len(want), lost, dup)
	if lost != 0 {
		t.Fatalf("%d events lost", lost)
	}
}

// waitWatermarkPast waits until detection (with no endpoint) has moved its
// clients watermark past at: without the import's rewind, what it passed
// would never be read again.
func (e *env) waitWatermarkPast(s *Service, at time.Time) {
	e.t.Helper()
	testenv.Eventually(e.t, "detection moved past the change made during the loss", func() error {
		v := e.rdb.Get(context.Background(), s.l.watermark("TEST", "clients")).Val()
		us, _, _ := strings.Cut(v, "|")
		if n, err := strconv.ParseInt(us, 10, 64); err == nil && time.UnixMicro(n).After(at) {
			return nil
		}
		return fmt.Errorf("the clients watermark is %q", v)
	})
}

// The plan of an import says what it does, and a second import of the same
// export writes nothing; an endpoint whose record in the file is older than
// Redis's is kept as Redis has it.
func TestImportEndpointsIdempotent(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cfg := e.config()
	cfg.Secrets = keyring(t, newSealKey(t))
	s := e.service(cfg)
	ep, _ := e.endpoint(s)
	st, err := s.ExportState(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if p := importState(t, s, st); fmt.Sprint(p.Counts()) != "0 0 1" || len(p.rewind) != 0 {
		t.Errorf("importing what Redis has: %v, rewind %v", fmt.Sprint(p.Counts()), p.rewind)
	}
	if _, err := s.UpdateWebhook(context.Background(), ep.ID, Patch{Description: ptr("changed later")}); err != nil {
		t.Fatal(err)
	}
	importState(t, s, st)
	if got, _ := s.Webhook(context.Background(), ep.ID); got.Description != "changed later" {
		t.Errorf("an older record replaced a newer one: %q", got.Description)
	}
}

func ptr[T any](v T) *T { return &v }

// A step that read the endpoints before Redis lost them queues its events
// after the loss: none of its endpoints exists any more, so the event is
// neither kept nor remembered, and once an import restores the endpoint,
// the same event read again is queued for it. (Remembered, the event would
// be skipped for good: a sweep that straddled the loss lost it.)
func TestEventForLostEndpointsIsNotRemembered(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cfg := e.config()
	cfg.Secrets = keyring(t, newSealKey(t))
	s := e.service(cfg)
	ep, _ := e.endpoint(s)
	exported, err := s.ExportState(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ev := Event{ID: "evt_aaaaaaaaaaaaaaaaaaaaaaaaaa", Type: ClientCreated, Mode: invoicing.Test, CompanyID: e.company,
		ResourceID: cli1, Time: time.Now(), Data: json.RawMessage(`{}`)}
	ctx := context.Background()
	if e.loseState(ctx) == 0 {
		t.Fatal("nothing lost")
	}
	// As the sweep does (no watermark to compare), with the endpoints it
	// read before the loss.
	added, _, err := s.q.enqueue(ctx, nil, move{}, []queued{{ev: ev, eps: []string{ep.ID}}})
	if err != nil || added != 0 {
		t.Fatalf("queued for a lost endpoint: added %d, %v", added, err)
	}
	importState(t, s, exported)
	added, _, err = s.q.enqueue(ctx, nil, move{}, []queued{{ev: ev, eps: []string{ep.ID}}})
	if err != nil || added != 1 {
		t.Fatalf("the same event after the import: added %d, %v; want it queued", added, err)
	}
	if n := e.rdb.ZCard(ctx, s.l.queue(ep.ID)).Val(); n != 1 {
		t.Errorf("the restored endpoint's queue holds %d, want 1", n)
	}
}

// streamNamed is the detector's stream of that name.
func streamNamed(t *testing.T, name string) stream {
	t.Helper()
	for _, st := range streams {
		if st.name == name {
			return st
		}
	}
	t.Fatalf("no stream %q", name)
	return stream{}
}

// queuedFor is how many deliveries wait in an endpoint's queue.
func (e *env) queuedFor(s *Service, ep string) int64 {
	e.t.Helper()
	return e.rdb.ZCard(context.Background(), s.l.queue(ep)).Val()
}

// A detection step that read the endpoints before an import restored them
// (none, after the loss) and its watermark after the import's rewind does
// not move the watermark: routed to no endpoint, the window's events would
// be passed by for good. The next step, with the endpoints read again,
// reads the window back and queues them.
func TestStepRoutedBeforeImportLeavesTheRewind(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cfg := e.config()
	s := e.service(cfg)
	ep, _ := e.endpoint(s)
	e.insertClient(cli1, "Antes da perda")
	ctx := context.Background()
	exported, err := s.ExportState(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if e.loseState(ctx) == 0 {
		t.Fatal("nothing lost")
	}
	before, err := s.loadTargets(ctx, invoicing.Test, nil)
	if err != nil || len(before.companies) != 0 {
		t.Fatalf("targets after the loss: %+v %v", before, err)
	}
	importState(t, s, exported)
	clients := streamNamed(t, "clients")
	wm := s.l.watermark(invoicing.Test, "clients")
	dbNow, err := e.store.Changes().DatabaseNow(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.det.advance(ctx, e.store.Changes(), invoicing.Test, clients, before, dbNow, dbNow); err != nil {
		t.Fatal(err)
	}
	if got := e.rdb.Get(ctx, wm).Val(); got != markRewind {
		t.Fatalf("a step routed by the endpoints of before the import moved the watermark to %q", got)
	}
	after, err := s.loadTargets(ctx, invoicing.Test, before)
	if err != nil || len(after.companies) != 1 {
		t.Fatalf("targets after the import: %+v %v", after, err)
	}
	if err := s.det.advance(ctx, e.store.Changes(), invoicing.Test, clients, after, dbNow, dbNow); err != nil {
		t.Fatal(err)
	}
	if got := e.rdb.Get(ctx, wm).Val(); got == markRewind {
		t.Error("the step with the endpoints read again did not move the watermark")
	}
	if n := e.queuedFor(s, ep.ID); n != 1 {
		t.Errorf("the restored endpoint's queue holds %d, want the client of before the loss", n)
	}
}

// A sweep routed by endpoints read before one was created queues nothing
// (it would remember the events, and the new endpoint would never get
// them) and says so; made again with the endpoints read again, it queues
// each event for both.
func TestSweepRoutedBeforeAnEndpointChangeIsStale(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := e.service(e.config())
	first, _ := e.endpoint(s)
	ctx := context.Background()
	before, err := s.loadTargets(ctx, invoicing.Test, nil)
	if err != nil {
		t.Fatal(err)
	}
	second, _ := e.endpoint(s)
	e.insertClient(cli1, "Depois do segundo")
	dbNow, err := e.store.Changes().DatabaseNow(ctx)
	if err != nil {
		t.Fatal(err)
	}
	stale, err := s.det.sweepOnce(ctx, e.store.Changes(), invoicing.Test, before, dbNow, dbNow.Add(time.Second))
	if err != nil || !stale {
		t.Fatalf("sweep with the endpoints of before: stale %v, %v", stale, err)
	}
	if n := e.queuedFor(s, first.ID); n != 0 {
		t.Fatalf("a stale sweep queued %d", n)
	}
	after, err := s.loadTargets(ctx, invoicing.Test, before)
	if err != nil {
		t.Fatal(err)
	}
	if stale, err := s.det.sweepOnce(ctx, e.store.Changes(), invoicing.Test, after, dbNow, dbNow.Add(time.Second)); err != nil || stale {
		t.Fatalf("sweep with the endpoints read again: stale %v, %v", stale, err)
	}
	for _, ep := range []Webhook{first, second} {
		if n := e.queuedFor(s, ep.ID); n != 1 {
			t.Errorf("endpoint %s: %d queued, want 1", ep.ID, n)
		}
	}
}

// An export's resume point is the earliest of the change streams'
// watermarks and of the events still to deliver; an import moves each
// change stream's watermark back to it, never forward, and leaves a rewind
// under way as it is. An export of version 1 (no resume point) rewinds.
func TestImportResumesNeverForward(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cfg, clock := e.clocked()
	s := e.service(cfg)
	ep, _ := e.endpoint(s)
	ctx := context.Background()
	t0 := clock.Now().UTC().Add(-6 * time.Hour).Truncate(time.Millisecond)
	marks := map[string]time.Time{"invoices": t0.Add(3 * time.Hour), "clients": t0.Add(2 * time.Hour), "transmissions": t0.Add(4 * time.Hour)}
	for name, at := range marks {
		e.rdb.Set(ctx, s.l.watermark(invoicing.Test, name), encodeMark(position(at, "x")), 0)
	}
	pending := Event{ID: "evt_aaaaaaaaaaaaaaaaaaaaaaaaaa", Type: ClientCreated, Mode: invoicing.Test, CompanyID: e.company,
		ResourceID: cli1, Time: t0.Add(time.Hour), Data: json.RawMessage(`{}`)}
	if _, _, err := s.q.enqueue(ctx, nil, move{}, []queued{{ev: pending, eps: []string{ep.ID}}}); err != nil {
		t.Fatal(err)
	}
	st, err := s.ExportState(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if at := st.ResumeFrom[invoicing.Test]; !at.Equal(pending.Time) || len(st.ResumeFrom) != 1 {
		t.Fatalf("resume points %v, want the pending event's time %v for TEST only", st.ResumeFrom, pending.Time)
	}
	// No further back than Recovery before the export.
	clock.Add(24 * time.Hour)
	if old, err := s.ExportState(ctx); err != nil || !old.ResumeFrom[invoicing.Test].Equal(clock.Now().Add(-24*time.Hour).UTC()) {
		t.Fatalf("a day later: resume points %v, %v; want Recovery before the export", old.ResumeFrom, err)
	}
	// After a loss: each stream resumes there; the overdue loop rewinds.
	e.loseState(ctx)
	e.rdb.Set(ctx, s.l.watermark(invoicing.Test, "invoices"), encodeMark(position(t0, "y")), 0) // earlier: kept
	e.rdb.Set(ctx, s.l.watermark(invoicing.Test, "transmissions"), markRewind, 0)               // a rewind: kept
	importState(t, s, st)
	want := map[string]string{"invoices": encodeMark(position(t0, "y")), "clients": encodeMark(position(pending.Time, "")),
		"transmissions": markRewind, "overdue": markRewind}
	for name, w := range want {
		if got := e.rdb.Get(ctx, s.l.watermark(invoicing.Test, name)).Val(); got != w {
			t.Errorf("%s after the import: %q, want %q", name, got, w)
		}
	}
	// Version 1: the whole window.
	e.loseState(ctx)
	st.Version, st.ResumeFrom = 1, nil
	importState(t, s, st)
	if got := e.rdb.Get(ctx, s.l.watermark(invoicing.Test, "clients")).Val(); got != markRewind {
		t.Errorf("an export of version 1: clients %q, want a rewind", got)
	}
}
