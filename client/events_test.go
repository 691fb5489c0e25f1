package client_test

import (
	"context"
	"sync"
	"testing"

	"github.com/invoicing-ao/gateway/backend/gendata"
	"github.com/invoicing-ao/gateway/client"
	"github.com/invoicing-ao/gateway/internal/testenv"
)

// The feed through the client: clients created through the API come as
// client.created events, each once, by PollEvents and by Events, with the
// data of Get client and the cursor to poll again from.
func TestEventsWalkers(t *testing.T) {
	t.Parallel()
	g := startGateway(t)
	a := g.api(t, client.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	var run sync.WaitGroup
	run.Go(func() { g.events.Run(ctx) })
	defer func() { cancel(); run.Wait() }()

	typ := "client.created"
	// A cursor is bound to its filters: every poll sends the same.
	cursor, err := a.PollEvents(ctx, client.ListEventsParams{Type: &typ}, "", func(client.Event) error { return nil })
	if err != nil || cursor == "" {
		t.Fatalf("the first poll: %q, %v", cursor, err)
	}
	made := map[string]bool{}
	for i := range 3 {
		c, err := a.CreateClient(ctx, client.ClientInput{Name: "Feed " + string(rune('A'+i))})
		if err != nil {
			t.Fatal(err)
		}
		made[c.Id.String()] = true
	}
	got := map[string]int{}
	testenv.Eventually(t, "the three clients' events in the feed", func() error {
		cursor, err = a.PollEvents(ctx, client.ListEventsParams{Type: &typ}, cursor, func(e client.Event) error {
			c, err := e.Client()
			if err != nil {
				return err
			}
			if made[c.Id.String()] {
				got[c.Id.String()]++
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return testenv.Want(len(got), len(made), "clients seen")
	})
	for id := range made {
		if got[id] != 1 {
			t.Errorf("client %s: %d events", id, got[id])
		}
	}
	newest := client.Newest
	n := 0
	for e, err := range a.Events(ctx, client.ListEventsParams{Order: &newest, Type: &typ}) {
		if err != nil {
			t.Fatal(err)
		}
		if e.RecordedAt.IsZero() || e.ID == "" {
			t.Fatalf("an event without its id or recording: %+v", e)
		}
		// Whose it is, as its deliveries say: the key's company and mode.
		if e.CompanyID != gendata.DemoCompanyA || e.Mode != "LIVE" {
			t.Fatalf("an event of %q in mode %q, read with company A's LIVE key", e.CompanyID, e.Mode)
		}
		n++
	}
	if n < len(made) {
		t.Errorf("newest first, %d events", n)
	}
}
