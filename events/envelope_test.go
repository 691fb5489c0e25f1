package events

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/invoicing-ao/gateway/backend"
	"github.com/invoicing-ao/gateway/client"
	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
)

// owner is whose an event is: a company, and a mode.
type owner struct {
	company string
	mode    invoicing.Mode
}

// router is an integrator's receiver serving several companies in both
// modes from one URL, as the Webhooks guide describes it: it reads whose a
// delivery says it is (client.WebhookOwner), verifies it with the Go
// client's verifier of that company's endpoint for that mode, and files
// the verified event under its companyId and mode.
type router struct {
	mu        sync.Mutex
	verifiers map[owner]*client.WebhookVerifier
	buckets   map[owner][]string // "type resource" of each event filed
	refused   []string
	notify    chan struct{}
}

func (r *router) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	company, mode, err := client.WebhookOwner(body)
	r.mu.Lock()
	defer r.mu.Unlock()
	v := r.verifiers[owner{company, invoicing.Mode(mode)}]
	if err != nil || v == nil {
		r.refused = append(r.refused, fmt.Sprintf("%s %s: %v, or no endpoint", company, mode, err))
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	ev, err := v.Verify(req.Header, body)
	if err != nil {
		r.refused = append(r.refused, fmt.Sprintf("%s %s: %v", company, mode, err))
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	var data struct{ ID, EndpointID string }
	_ = json.Unmarshal(ev.Data, &data)
	o := owner{ev.CompanyID, invoicing.Mode(ev.Mode)}
	r.buckets[o] = append(r.buckets[o], ev.Type+" "+data.ID+data.EndpointID)
	w.WriteHeader(http.StatusNoContent)
	select {
	case r.notify <- struct{}{}:
	default:
	}
}

// filed is what each bucket holds, each bucket's events sorted and once.
func (r *router) filed() map[owner][]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[owner][]string{}
	for o, evs := range r.buckets {
		s := slices.Clone(evs)
		sort.Strings(s)
		out[o] = slices.Compact(s)
	}
	return out
}

// One URL for three companies in both modes (a live and a sandbox
// database, as the platform has): six endpoints, each with its own secret,
// point at one receiver, which routes each delivery by its body's
// companyId and mode. Every event of real changes in PostgreSQL, and each
// endpoint's test delivery, lands in its company's and mode's bucket, and
// nothing is refused.
func TestOneURLForManyCompanies(t *testing.T) {
	t.Parallel()
	e := newEnv(t) // its sandbox holds company A
	ctx := context.Background()
	companies := []string{testCompany, "b0000000-0000-4000-8000-00000000000b", "c0000000-0000-4000-8000-00000000000c"}
	liveStore, exec := e.bothModes(companies)
	cfg := e.config()
	cfg.Sources[invoicing.Live] = liveStore.Changes()
	s := e.service(cfg)

	r := &router{verifiers: map[owner]*client.WebhookVerifier{}, buckets: map[owner][]string{}, notify: make(chan struct{}, 1)}
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	endpoints := map[owner]string{}
	for _, c := range companies {
		for _, m := range invoicing.Modes {
			ep, secret, err := s.CreateWebhook(ctx, NewWebhook{CompanyID: c, Mode: m, URL: srv.URL + "/webhooks/invoicing"})
			if err != nil {
				t.Fatal(err)
			}
			v, err := client.NewWebhookVerifier(client.WebhookConfig{Secrets: []string{secret}})
			if err != nil {
				t.Fatal(err)
			}
			r.mu.Lock()
			r.verifiers[owner{c, m}] = v
			r.mu.Unlock()
			endpoints[owner{c, m}] = ep.ID
		}
	}
	e.run(s)

	// Each company and mode gets a client and an invoice of its own, issued
	// then paid; their ids say whose they are.
	want := map[owner][]string{}
	ids := func(o owner, ci int) (cl, doc string) {
		mi := slices.Index(invoicing.Modes[:], o.mode)
		return fmt.Sprintf("c%d%d00000-0000-4000-8000-000000000001", ci, mi), fmt.Sprintf("d%d%d00000-0000-4000-8000-000000000001", ci, mi)
	}
	for ci, c := range companies {
		for _, m := range invoicing.Modes {
			o := owner{c, m}
			cl, doc := ids(o, ci)
			exec(m, `INSERT INTO customers (id, company_id, name, nif) VALUES ($1, $2, $3, NULL)`, cl, c, "Cliente "+cl[:3])
			exec(m, `INSERT INTO documents (id, company_id, doc_type, series, seq, state, customer_name, net_total, tax_total, gross_total, issued_at, due_date)
VALUES ($1, $2, 'FT', '2026', 1, 'issued', 'Consumidor', 100, 14, 114, now(), NULL)`, doc, c)
			exec(m, `INSERT INTO document_lines (document_id, line_no, description, quantity, unit_price, tax_rate, line_total) VALUES ($1, 1, 'Serviço', 1, 100, 14, 100)`, doc)
			want[o] = []string{string(ClientCreated) + " " + cl, string(InvoiceIssued) + " " + doc}
		}
	}
	r.waitFor(t, want)
	for ci, c := range companies {
		for _, m := range invoicing.Modes {
			o := owner{c, m}
			_, doc := ids(o, ci)
			exec(m, `UPDATE documents SET state = 'paid', updated_at = now() WHERE id = $1`, doc)
			if _, err := s.TestWebhook(ctx, endpoints[o]); err != nil {
				t.Fatal(err)
			}
			want[o] = append(want[o], string(InvoicePaid)+" "+doc, string(TestType)+" "+endpoints[o])
		}
	}
	got := r.waitFor(t, want)
	for o, w := range want {
		sort.Strings(w)
		if !slices.Equal(got[o], w) {
			t.Errorf("%s %s: filed %v, want %v", o.company, o.mode, got[o], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d buckets, want %d: %v", len(got), len(want), got)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.refused) > 0 {
		t.Errorf("refused: %v", r.refused)
	}
}

// waitFor waits (up to a generous deadline) until every wanted event is
// filed somewhere, and returns what each bucket holds.
func (r *router) waitFor(t *testing.T, want map[owner][]string) map[owner][]string {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for {
		got := r.filed()
		anywhere := map[string]bool{}
		for _, evs := range got {
			for _, ev := range evs {
				anywhere[ev] = true
			}
		}
		missing := 0
		for _, evs := range want {
			for _, ev := range evs {
				if !anywhere[ev] {
					missing++
				}
			}
		}
		if missing == 0 {
			return got
		}
		select {
		case <-r.notify:
		case <-time.After(100 * time.Millisecond):
		case <-deadline:
			t.Fatalf("%d events not filed after 60 s; filed %v", missing, got)
		}
	}
}

// An event is delivered with the body built from the event as the queue
// keeps it, which has held its company and mode since events were first
// queued: a message stored before the body named them is sent with them.
// Its id stays what it was.
func TestQueuedEventCarriesItsOwner(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := e.service(e.config())
	ep, _ := e.endpoint(s)
	ctx := context.Background()
	const res = "11000000-0000-4000-8000-0000000000ff"
	ev := Event{ID: eventID(invoicing.Test, e.company, ClientCreated, res, ""), Type: ClientCreated, Mode: invoicing.Test,
		CompanyID: e.company, ResourceID: res, Time: time.Now().UTC(), Data: json.RawMessage(`{"id":"` + res + `"}`)}
	if _, _, err := s.q.enqueue(ctx, nil, move{}, []queued{{ev: ev, eps: []string{ep.ID}}}); err != nil {
		t.Fatal(err)
	}
	// The message as the queue has stored it all along, written over the
	// one just queued.
	stored := `{"id":"` + ev.ID + `","type":"client.created","mode":"TEST","companyId":"` + e.company + `","resourceId":"` + res +
		`","time":"2026-03-01T09:15:02.12Z","data":{"id":"` + res + `"}}`
	if err := e.rdb.Set(ctx, s.l.message(ev.ID), stored, time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
	e.run(s)
	d := e.recv.waitFor(key{ClientCreated, res})[0]
	want := `{"type":"client.created","timestamp":"2026-03-01T09:15:02.120Z","companyId":"` + e.company + `","mode":"TEST","data":{"id":"` + res + `"}}`
	if string(d.body) != want || d.header.Get("webhook-id") != ev.ID {
		t.Errorf("delivered %s %s\nwant %s %s", d.header.Get("webhook-id"), d.body, ev.ID, want)
	}
	// The delivery log says whose it is, as the body does.
	if got, err := s.Delivery(ctx, ep.ID, ev.ID); err != nil || got.CompanyID != e.company || got.Mode != invoicing.Test {
		t.Errorf("the log's delivery: %+v, %v", got, err)
	}
}

// bothModes adds a LIVE database beside e's sandbox, with companies in both
// (e's own company is in the sandbox already); it answers the LIVE store and
// a statement runner by mode.
func (e *env) bothModes(companies []string) (*backend.Store, func(m invoicing.Mode, sql string, args ...any)) {
	t, ctx := e.t, context.Background()
	live := testenv.Postgres(t)
	if err := backend.ApplySchema(ctx, live); err != nil {
		t.Fatal(err)
	}
	livePool, err := pgxpool.New(ctx, live)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(livePool.Close)
	liveStore, err := backend.Open(ctx, backend.Config{URL: live})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(liveStore.Close)
	dbs := map[invoicing.Mode]*pgxpool.Pool{invoicing.Live: livePool, invoicing.Test: e.db}
	exec := func(m invoicing.Mode, sql string, args ...any) {
		t.Helper()
		if _, err := dbs[m].Exec(ctx, sql, args...); err != nil {
			t.Fatalf("%s: %s: %v", m, sql, err)
		}
	}
	for i, c := range companies {
		for _, m := range invoicing.Modes {
			if m == invoicing.Live || c != testCompany {
				exec(m, `INSERT INTO companies (id, legal_name, nif) VALUES ($1, $2, $3)`, c, "Empresa "+c[:1], fmt.Sprintf("500000000%d", i+1))
			}
		}
	}
	return liveStore, exec
}
