package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/invoicing-ao/gateway/client"
)

// With --webhooks, each loaded company gets one LIVE webhook endpoint,
// created through the admin API, to a receiver this tool runs itself; after
// the load it waits for the events to arrive (the drain) and says how many
// came, how many were new, of which types, and how long they took. The
// endpoints are deleted when the run ends, however it ends.

// webhookHint is what a gateway that refuses the receiver's URL needs.
const webhookHint = "the gateway must accept an http:// endpoint on this host: run it with eventsAllowHTTP: true and " +
	"eventsAllowedNetworks: 127.0.0.0/8 (GATEWAY_EVENTS_ALLOW_HTTP=true GATEWAY_EVENTS_ALLOWED_NETWORKS=127.0.0.0/8)"

// receiver takes the gateway's deliveries on 127.0.0.1. It answers 204 to
// every one, and verifies each with the secret the admin API returned for
// its endpoint (client.WebhookVerifier, as an integrator would): a refusal
// would make the gateway retry and lengthen the drain, so a delivery that
// does not verify is counted and fails the run instead.
type receiver struct {
	base string // http://ADDR/hooks/, then the company id
	srv  *http.Server

	mu         sync.Mutex
	verifiers  map[string]*client.WebhookVerifier // by company
	seen       map[string]bool                    // webhook-ids
	byType     map[string]int                     // of the distinct events
	deliveries int
	unverified int
	why        string // the last unverified delivery's reason
	last       time.Time
}

func startReceiver(addr string) (*receiver, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("webhook receiver: %w", err)
	}
	r := &receiver{base: "http://" + ln.Addr().String() + "/hooks/",
		verifiers: map[string]*client.WebhookVerifier{}, seen: map[string]bool{}, byType: map[string]int{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /hooks/{company}", r.serve)
	r.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = r.srv.Serve(ln) }()
	return r, nil
}

func (r *receiver) close() { _ = r.srv.Close() }

// expect registers the secret of company's endpoint.
func (r *receiver) expect(company, secret string) error {
	v, err := client.NewWebhookVerifier(client.WebhookConfig{Secrets: []string{secret}})
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.verifiers[company] = v
	r.mu.Unlock()
	return nil
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	r.mu.Lock()
	v := r.verifiers[req.PathValue("company")]
	r.mu.Unlock()
	typ, why := "", ""
	switch {
	case err != nil:
		why = "reading the body: " + err.Error()
	case v == nil:
		why = "no endpoint of this run's for company " + req.PathValue("company")
	default:
		if ev, err := v.Verify(req.Header, body); err != nil {
			why = err.Error()
		} else {
			typ = ev.Type
		}
	}
	r.record(req.Header.Get("webhook-id"), typ, why, time.Now())
	w.WriteHeader(http.StatusNoContent)
}

// record counts one delivery of event id (its type when it verified, else
// why not).
func (r *receiver) record(id, typ, why string, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.deliveries++
	r.last = at
	if why != "" {
		r.unverified++
		r.why = why
		typ = "(unverified)"
	}
	if !r.seen[id] {
		r.seen[id] = true
		r.byType[typ]++
	}
}

// tally is what the receiver has counted so far.
type tally struct {
	deliveries, distinct, unverified int
	byType                           map[string]int
	why                              string
	last                             time.Time
}

func (r *receiver) tally() tally {
	r.mu.Lock()
	defer r.mu.Unlock()
	return tally{deliveries: r.deliveries, distinct: len(r.seen), unverified: r.unverified,
		byType: maps.Clone(r.byType), why: r.why, last: r.last}
}

// String is the tally's report line.
func (t tally) String() string {
	twice := "none twice"
	if d := t.deliveries - t.distinct; d > 0 {
		twice = fmt.Sprintf("%d sent again", d)
	}
	verified := "all verified"
	if t.unverified > 0 {
		verified = fmt.Sprintf("%d NOT verified (last: %s)", t.unverified, t.why)
	}
	types := make([]string, 0, len(t.byType))
	for typ := range t.byType {
		types = append(types, typ)
	}
	slices.Sort(types)
	for i, typ := range types {
		types[i] = fmt.Sprintf("%s %d", typ, t.byType[typ])
	}
	return fmt.Sprintf("%d deliveries of %d distinct events, %s, signatures %s (%s)",
		t.deliveries, t.distinct, twice, verified, strings.Join(types, ", "))
}

// createEndpoints gives every loaded company a LIVE endpoint to the
// receiver, remembering each for cleanup.
func (b *bencher) createEndpoints(ctx context.Context) error {
	err := parallel(len(b.companies), 16, func(i int) error {
		id := b.companies[i].id
		body := `{"mode":"LIVE","url":"` + b.recv.base + id + `","description":"gateway-bench receiver"}`
		var v struct{ ID, Secret string }
		if err := b.create(ctx, http.MethodPost, "/admin/v1/companies/"+id+"/webhooks", body, &v); err != nil {
			return err
		}
		b.note(func() { b.endpoints = append(b.endpoints, v.ID) })
		return b.recv.expect(id, v.Secret)
	})
	// One refusal says it all: the others (one per worker) are the same.
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		err = joined.Unwrap()[0]
	}
	if err != nil {
		return endpointRefused(err)
	}
	fmt.Fprintf(b.out, "webhooks: %d LIVE endpoints to %sCOMPANY (answers 204, verifies each signature with its endpoint's secret)\n",
		len(b.endpoints), b.recv.base)
	return nil
}

// endpointRefused adds to the admin API's refusal of an endpoint what to do
// about it.
func endpointRefused(err error) error {
	var ae *apiError
	if !errors.As(err, &ae) {
		return err
	}
	switch {
	case ae.status == http.StatusBadRequest && strings.Contains(ae.body, "url"):
		return fmt.Errorf("%w\n%s", err, webhookHint)
	case ae.status == http.StatusConflict:
		return fmt.Errorf("%w\nthe company has its most LIVE endpoints already: delete one (gateway webhooks list/delete)", err)
	}
	return err
}

// drainVerdict says why the drain is over, or "" while it goes on: every
// expected event arrived, nothing arrived for quiet (since the later of
// from and the last delivery), or timeout passed since from.
func drainVerdict(distinct, expected int, now, from, last time.Time, quiet, timeout time.Duration) string {
	switch {
	case distinct >= expected:
		return "all"
	case now.Sub(from) >= timeout:
		return "timeout"
	case now.Sub(from) >= quiet && now.Sub(last) >= quiet:
		return "quiet"
	}
	return ""
}

// drain waits, after the load and the changes, for the expected events:
// the changes committed and the clients the load created.
func (b *bencher) drain(ctx context.Context, changes, created int) error {
	expected := changes + created
	from := time.Now()
	var t tally
	verdict := ""
	for verdict == "" {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		t = b.recv.tally()
		verdict = drainVerdict(t.distinct, expected, time.Now(), from, t.last, b.o.drainQuiet, b.o.drainTimeout)
	}
	after := t.last.Sub(from).Round(time.Millisecond)
	switch verdict {
	case "all":
		fmt.Fprintf(b.out, "drain: all %d expected events arrived (%d changes + %d clients created by the load), the last %s after the load and the changes ended\n",
			expected, changes, created, max(after, 0))
	default:
		why := fmt.Sprintf("nothing arrived for %s", b.o.drainQuiet)
		if verdict == "timeout" {
			why = fmt.Sprintf("--drain-timeout %s passed", b.o.drainTimeout)
		}
		fmt.Fprintf(b.out, "drain: stopped, %s: %d of %d expected events missing (%d changes + %d clients created by the load)\n",
			why, expected-t.distinct, expected, changes, created)
	}
	fmt.Fprintf(b.out, "webhooks: %s\n", t)
	switch {
	case verdict != "all":
		b.failed = fmt.Errorf("webhooks: %d of %d expected events did not arrive", expected-t.distinct, expected)
	case t.unverified > 0:
		b.failed = fmt.Errorf("webhooks: %d deliveries did not verify", t.unverified)
	}
	return nil
}
