package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/invoicing-ao/gateway/internal/testenv"
	"github.com/invoicing-ao/gateway/invoicing"
)

// feedPage is GET /events's answer.
type feedPage struct {
	Data []struct {
		ID         string `json:"id"`
		RecordedAt string `json:"recordedAt"`
		Type       string `json:"type"`
		Data       struct {
			ID string `json:"id"`
		} `json:"data"`
	} `json:"data"`
	PageSize   int     `json:"pageSize"`
	HasMore    bool    `json:"hasMore"`
	NextCursor *string `json:"nextCursor"`
}

func feedGet(t *testing.T, in *instance, key, company, query string, header map[string]string) (resp, feedPage) {
	t.Helper()
	r := do(t, in.pub.URL, req{Path: "/api/v1/v1/events?" + query, Key: key, Company: company, Header: header})
	var p feedPage
	if r.Status == 200 {
		if err := json.Unmarshal(r.Body, &p); err != nil {
			t.Fatal(err)
		}
	}
	return r, p
}

// insertClients makes n clients of a company in a database, batch by
// batch (each batch one statement), as the platform would; their ids are
// prefix and a number.
func insertClients(ctx context.Context, dbURL, company, prefix string, n, batch int) error {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	for i := 0; i < n; i += batch {
		if _, err := conn.Exec(ctx, `INSERT INTO customers (id, company_id, name, nif)
SELECT ($3 || lpad(g::text, 12, '0'))::uuid, $1, 'Cliente ' || g, NULL FROM generate_series($2::int, $2::int + $4 - 1) g`,
			company, i, prefix, min(batch, n-i)); err != nil {
			return err
		}
	}
	return nil
}

// A poller with an events:read key, polling oldest first with its cursor
// (and the last ETag) while 10,000 clients are created, sees each
// client.created once, in the order recorded; nothing of another company
// or of the other mode.
func TestEventsFeedPollerSeesEveryChangeOnce(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	in := w.start()
	ctx, cancel := context.WithCancel(context.Background())
	var run sync.WaitGroup
	run.Go(func() { in.events.Run(ctx) })
	t.Cleanup(func() { cancel(); run.Wait() })
	key := in.key(t, coA, invoicing.Test, "events:read").Key
	// Where the walk starts: the feed before the changes.
	_, first := feedGet(t, in, key, coA, "pageSize=100", nil)
	for first.HasMore {
		_, first = feedGet(t, in, key, coA, "pageSize=100&cursor="+url.QueryEscape(*first.NextCursor), nil)
	}
	const total = 10_000
	var writers sync.WaitGroup
	errs := make(chan error, 3)
	writers.Go(func() { errs <- insertClients(ctx, w.test, coA, "c1000000-0000-4000-8000-", total, 50) })
	writers.Go(func() { errs <- insertClients(ctx, w.test, coB, "c2000000-0000-4000-8000-", 500, 50) })
	writers.Go(func() { errs <- insertClients(ctx, w.live, coA, "c3000000-0000-4000-8000-", 500, 50) })

	notModified := pollEveryChange(t, in, key, *first.NextCursor, total)
	writers.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d changes seen once each; %d polls answered 304", total, notModified)
	// The other company and the other mode have theirs, apart.
	for _, c := range []struct {
		company string
		mode    invoicing.Mode
		prefix  string
	}{{coB, invoicing.Test, "c2000000-"}, {coA, invoicing.Live, "c3000000-"}} {
		k := in.key(t, c.company, c.mode, "events:read").Key
		if n := countFeedEvents(t, in, k, c.company, c.prefix, 500); n != 500 {
			t.Errorf("%s %s: %d of its 500 events", c.company, c.mode, n)
		}
	}
}

// pollEveryChange polls company A's sandbox feed from cursor, oldest first,
// with the last ETag once at the end, until it has seen total
// client.created events of the c1000000- clients, and fails on any other
// event, one seen twice or out of order. It returns how many polls were
// answered 304.
func pollEveryChange(t *testing.T, in *instance, key, cursor string, total int) (notModified int) {
	t.Helper()
	seen := map[string]bool{}
	etag, lastAt := "", ""
	deadline := time.Now().Add(4 * time.Minute)
	for len(seen) < total && time.Now().Before(deadline) {
		var h map[string]string
		if etag != "" {
			h = map[string]string{"If-None-Match": etag}
		}
		var r resp
		var p feedPage
		// At the end of the feed: until something new is recorded, 304.
		testenv.Eventually(t, "an event after the cursor", func() error {
			if r, p = feedGet(t, in, key, coA, "pageSize=100&cursor="+url.QueryEscape(cursor), h); r.Status == 304 {
				notModified++
				return errors.New("304 Not Modified")
			}
			return nil
		})
		if r.Status != 200 || p.NextCursor == nil {
			t.Fatalf("poll: %d %s", r.Status, r.Body)
		}
		for _, e := range p.Data {
			if e.Type != "client.created" || !strings.HasPrefix(e.Data.ID, "c1000000-") {
				t.Fatalf("an event not of company A's sandbox clients: %+v", e)
			}
			if seen[e.Data.ID] {
				t.Fatalf("client %s seen twice", e.Data.ID)
			}
			if e.RecordedAt < lastAt {
				t.Fatalf("recorded at %s after an event recorded at %s", e.RecordedAt, lastAt)
			}
			seen[e.Data.ID], lastAt = true, e.RecordedAt
		}
		cursor, etag = *p.NextCursor, ""
		if !p.HasMore {
			etag = r.Header.Get("ETag")
		}
	}
	if len(seen) != total {
		t.Fatalf("the poller saw %d of %d changes", len(seen), total)
	}
	return notModified
}

// countFeedEvents reads a company's client.created events with key, from
// the oldest, until want of the clients whose ids start with prefix have
// come, and fails on another feed's event. It returns how many came.
func countFeedEvents(t *testing.T, in *instance, key, company, prefix string, want int) int {
	t.Helper()
	n := 0
	q := "pageSize=100&type=client.created"
	testenv.Eventually(t, fmt.Sprintf("%d events of %s", want, prefix), func() error {
		_, p := feedGet(t, in, key, company, q, nil)
		for _, e := range p.Data {
			if strings.HasPrefix(e.Data.ID, "c") && !strings.HasPrefix(e.Data.ID, prefix) {
				t.Fatalf("%s: another feed's event %+v", company, e)
			}
			if strings.HasPrefix(e.Data.ID, prefix) {
				n++
			}
		}
		q = "pageSize=100&type=client.created&cursor=" + url.QueryEscape(*p.NextCursor)
		if n < want {
			return fmt.Errorf("%d events", n)
		}
		return nil
	})
	return n
}

// What the feed refuses: a key without the scope (named), another
// company's key, and every malformed parameter, each named.
func TestEventsFeedRefusals(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	in := w.start()
	key := in.key(t, coA, invoicing.Live, "events:read").Key
	noScope := in.key(t, coA, invoicing.Live, "invoices:read,clients:read,clients:write").Key
	m := expectProblem(t, do(t, in.pub.URL, req{Path: "/api/v1/v1/events", Key: noScope, Company: coA}), 403, "insufficient_scope")
	if !strings.Contains(fmt.Sprint(m["detail"]), "events:read") {
		t.Errorf("the refusal does not name the scope: %v", m["detail"])
	}
	other := in.key(t, coB, invoicing.Live, "events:read").Key
	expectProblem(t, do(t, in.pub.URL, req{Path: "/api/v1/v1/events", Key: other, Company: coA}), 403, "company_mismatch")

	_, p := feedGet(t, in, key, coA, "", nil)
	newest := "order=newest"
	_, pn := feedGet(t, in, key, coA, newest, nil)
	for query, field := range map[string]string{
		"cursor=AgAAAZyqz0ZeAAAAAAAAAAMx8vbF4yGhLg0zTQ2nWCP5":        "cursor",
		"type=invoice.paid&cursor=" + url.QueryEscape(*p.NextCursor): "cursor", // another filter's
		"order=newest&cursor=" + url.QueryEscape(*p.NextCursor):      "cursor", // another order's
		"type=invoice.lost":                                     "type",
		"type=invoice.paid,,invoice.paid":                       "type",
		"since=yesterday":                                       "since",
		"since=2026-03-02T00:00:00Z&until=2026-03-01T00:00:00Z": "until",
		"order=sideways":                                        "order",
		"pageSize=101":                                          "pageSize",
		"updatedSince=2026-03-01T00:00:00Z":                     "updatedSince",
	} {
		r := do(t, in.pub.URL, req{Path: "/api/v1/v1/events?" + query, Key: key, Company: coA})
		m := expectProblem(t, r, 400, "invalid_parameter")
		if errs, _ := m["errors"].([]any); len(errs) == 0 || errs[0].(map[string]any)["field"] != field {
			t.Errorf("%s: errors %v, want the field %s", query, m["errors"], field)
		}
	}
	if pn.NextCursor != nil && !pn.HasMore {
		t.Errorf("newest first, the end without more has a cursor")
	}
}

// A poller's ETag: 304 while nothing new is recorded after its cursor, 200
// with the new event once one is.
func TestEventsFeedETag(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	in := w.start()
	key := in.key(t, coA, invoicing.Test, "events:read").Key
	r, p := feedGet(t, in, key, coA, "", nil)
	for p.HasMore {
		r, p = feedGet(t, in, key, coA, "cursor="+url.QueryEscape(*p.NextCursor), nil)
	}
	q := "cursor=" + url.QueryEscape(*p.NextCursor)
	r, _ = feedGet(t, in, key, coA, q, nil)
	etag := r.Header.Get("ETag")
	if r2, _ := feedGet(t, in, key, coA, q, map[string]string{"If-None-Match": etag}); r2.Status != 304 {
		t.Fatalf("nothing new: %d", r2.Status)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var run sync.WaitGroup
	run.Go(func() { in.events.Run(ctx) })
	defer func() { cancel(); run.Wait() }()
	if err := insertClients(ctx, w.test, coA, "c4000000-0000-4000-8000-", 1, 1); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, "the new event", func() error {
		r, p := feedGet(t, in, key, coA, q, map[string]string{"If-None-Match": etag})
		if r.Status != 200 {
			return fmt.Errorf("%d", r.Status)
		}
		if len(p.Data) != 1 || p.Data[0].Data.ID != "c4000000-0000-4000-8000-000000000000" {
			t.Fatalf("the new event: %s", r.Body)
		}
		return nil
	})
}
