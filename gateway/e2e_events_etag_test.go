package gateway_test

import (
	"context"
	"fmt"
	"net/url"
	"sync"
	"testing"

	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
)

// The poller as integrators.md and the document write it: it keeps the
// last answer's ETag and nextCursor, and asks again from that cursor with
// that ETag. Its first poll after a page of events, with nothing new, is a
// 304 (not an empty 200 whose own tag only the next poll matches); once an
// event comes, a 200 with it. Newest first, a page keeps its body's tag.
func TestEventsFeedPollerIdleIs304(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	in := w.start()
	key := in.key(t, coA, invoicing.Test, "events:read").Key
	_, p := feedGet(t, in, key, coA, "", nil)
	for p.HasMore {
		_, p = feedGet(t, in, key, coA, "cursor="+url.QueryEscape(*p.NextCursor), nil)
	}
	start := *p.NextCursor
	ctx, cancel := context.WithCancel(context.Background())
	var run sync.WaitGroup
	run.Go(func() { in.events.Run(ctx) })
	defer func() { cancel(); run.Wait() }()

	// A page with an event, at the end of the feed.
	if err := insertClients(ctx, w.test, coA, "c5000000-0000-4000-8000-", 1, 1); err != nil {
		t.Fatal(err)
	}
	var r resp
	testenv.Eventually(t, "the first event", func() error {
		r, p = feedGet(t, in, key, coA, "cursor="+url.QueryEscape(start), nil)
		if r.Status != 200 || len(p.Data) == 0 {
			return fmt.Errorf("%d, %d events", r.Status, len(p.Data))
		}
		return nil
	})
	if p.HasMore || len(p.Data) != 1 {
		t.Fatalf("the page: %s", r.Body)
	}
	etag, next := r.Header.Get("ETag"), *p.NextCursor
	for i := range 3 {
		idle, _ := feedGet(t, in, key, coA, "cursor="+url.QueryEscape(next), map[string]string{"If-None-Match": etag})
		if idle.Status != 304 {
			t.Fatalf("idle poll %d with the page's ETag: %d %s", i+1, idle.Status, idle.Body)
		}
	}
	// Without the ETag, the same poll is the empty page, tagged as the
	// page it continues: where both end.
	empty, ep := feedGet(t, in, key, coA, "cursor="+url.QueryEscape(next), nil)
	if empty.Status != 200 || len(ep.Data) != 0 || empty.Header.Get("ETag") != etag || *ep.NextCursor != next {
		t.Fatalf("the empty page: %d %s, ETag %s (the page's %s)", empty.Status, empty.Body, empty.Header.Get("ETag"), etag)
	}

	if err := insertClients(ctx, w.test, coA, "c6000000-0000-4000-8000-", 1, 1); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the next event", func() error {
		r, p = feedGet(t, in, key, coA, "cursor="+url.QueryEscape(next), map[string]string{"If-None-Match": etag})
		if r.Status != 200 {
			return fmt.Errorf("%d", r.Status)
		}
		return nil
	})
	if len(p.Data) != 1 || p.Data[0].Data.ID != "c6000000-0000-4000-8000-000000000000" || r.Header.Get("ETag") == etag {
		t.Fatalf("the next event: %s (ETag %s)", r.Body, r.Header.Get("ETag"))
	}

	// Newest first: the first page's tag is its body's, which a new event
	// changes.
	nr, _ := feedGet(t, in, key, coA, "order=newest", nil)
	if again, _ := feedGet(t, in, key, coA, "order=newest", map[string]string{"If-None-Match": nr.Header.Get("ETag")}); again.Status != 304 {
		t.Fatalf("newest first, unchanged: %d", again.Status)
	}
	if err := insertClients(ctx, w.test, coA, "c7000000-0000-4000-8000-", 1, 1); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the newest page changed", func() error {
		r, _ := feedGet(t, in, key, coA, "order=newest", map[string]string{"If-None-Match": nr.Header.Get("ETag")})
		return testenv.Want(r.Status, 200, "status")
	})
}
